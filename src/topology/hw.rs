//! CPU structure from hwloc (live, XML, synthetic), or from sysfs files when
//! a fake sysroot brings no hwloc description.

use std::collections::BTreeMap;

use anyhow::Context;
use hwlocality::Topology;
use hwlocality::object::TopologyObject;
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::{OSDeviceType, ObjectType};
use hwlocality::topology::builder::{BuildFlags, TypeFilter};

use super::{Cache, CpuSource, NumaNode, Package, Pu};
use crate::sys::cpuset::CpuSet;
use crate::sys::sysroot::{MAX_FILE, MAX_LARGE_FILE, Sysroot};

/// NUMA node and local CPUs of a NIC as hwloc placed it.
pub(super) type NicLocality = BTreeMap<String, (Option<u32>, Option<CpuSet>)>;

pub(super) struct Cpus {
    pub source: String,
    pub pus: Vec<Pu>,
    pub numa_nodes: Vec<NumaNode>,
    pub packages: Vec<Package>,
    pub caches: Vec<Cache>,
    pub nic_locality: NicLocality,
    pub notes: Vec<String>,
}

pub(super) fn load_cpus(root: &Sysroot, src: &CpuSource) -> anyhow::Result<Cpus> {
    let (topo, source) = match src {
        CpuSource::Sysfs => return load_sysfs(root),
        CpuSource::Live => {
            // No I/O discovery live: it costs ~45 ms of PCI scanning and
            // reads the same sysfs numa_node/local_cpulist files the NIC
            // loader reads directly. Distances, memory attributes and CPU
            // kinds are not used either.
            let t = Topology::builder()
                .with_flags(
                    BuildFlags::IGNORE_DISTANCES
                        | BuildFlags::IGNORE_MEMORY_ATTRIBUTES
                        | BuildFlags::IGNORE_CPU_KINDS,
                )
                .map_err(|e| anyhow::anyhow!("hwloc: {e}"))?
                .build();
            match t {
                Ok(t) => (t, "hwloc live".to_string()),
                Err(e) => {
                    let mut c = load_sysfs(root)?;
                    c.notes.push(format!(
                        "hwloc discovery failed ({e}); CPU structure read from sysfs"
                    ));
                    return Ok(c);
                }
            }
        }
        CpuSource::Xml(path) => {
            // Read here (a regular file, bounded) rather than by hwloc from
            // the path: a device or FIFO given by mistake ends in a clear
            // error instead of a hang, and a missing file is told apart from
            // one that is not XML.
            let bytes = crate::sys::safefile::read_input(path, MAX_LARGE_FILE)
                .map_err(|e| anyhow::anyhow!("hwloc XML: {e:#}"))?;
            let xml = String::from_utf8(bytes)
                .map_err(|_| anyhow::anyhow!("hwloc XML {}: not UTF-8 text", path.display()))?;
            let t = Topology::builder()
                .from_xml(&xml)
                .map_err(|e| anyhow::anyhow!("hwloc XML {}: {e}", path.display()))?
                .with_io_type_filter(TypeFilter::KeepImportant)
                .map_err(|e| anyhow::anyhow!("hwloc: {e}"))?
                .build()
                .map_err(|e| anyhow::anyhow!("hwloc XML {}: cannot load: {e}", path.display()))?;
            (t, format!("hwloc xml {}", path.display()))
        }
        CpuSource::Synthetic(desc) => {
            let t = Topology::builder()
                .from_synthetic(desc)
                .map_err(|e| anyhow::anyhow!("hwloc synthetic description '{desc}': {e}"))?
                .build()
                .map_err(|e| anyhow::anyhow!("hwloc synthetic description '{desc}': {e}"))?;
            (t, format!("hwloc synthetic {desc}"))
        }
    };
    Ok(from_hwloc(&topo, source))
}

fn to_cpuset(obj: &TopologyObject) -> CpuSet {
    obj.cpuset()
        .map(|s| CpuSet::from_cpus(s.iter_set().map(|i| usize::from(i) as u32)))
        .unwrap_or_default()
}

fn os_index(obj: &TopologyObject) -> Option<u32> {
    obj.os_index().map(|i| i as u32)
}

fn from_hwloc(topo: &Topology, source: String) -> Cpus {
    let numa_nodes: Vec<NumaNode> = topo
        .objects_with_type(ObjectType::NUMANode)
        .map(|n| NumaNode {
            node: os_index(n).unwrap_or(n.logical_index() as u32),
            cpus: to_cpuset(n),
            memory_bytes: match n.attributes() {
                Some(ObjectAttributes::NUMANode(a)) => a.local_memory().map(|m| m.get()),
                _ => None,
            },
        })
        .collect();
    let packages: Vec<Package> = topo
        .objects_with_type(ObjectType::Package)
        .map(|p| Package {
            package: os_index(p).unwrap_or(p.logical_index() as u32),
            cpus: to_cpuset(p),
        })
        .collect();
    let mut caches = Vec::new();
    for (ty, level) in [(ObjectType::L2Cache, 2u8), (ObjectType::L3Cache, 3u8)] {
        for c in topo.objects_with_type(ty) {
            caches.push(Cache {
                level,
                index: c.logical_index() as u32,
                cpus: to_cpuset(c),
                size_bytes: match c.attributes() {
                    Some(ObjectAttributes::Cache(a)) => a.size().map(|s| s.get()),
                    _ => None,
                },
            });
        }
    }
    let mut pus: Vec<Pu> = topo
        .objects_with_type(ObjectType::PU)
        .filter_map(|pu| {
            let cpu = os_index(pu)?;
            let core = pu.first_ancestor_with_type(ObjectType::Core);
            let cpus = CpuSet::from_cpus([cpu]);
            Some(Pu {
                cpu,
                core: core.map(|c| c.logical_index() as u32),
                package: pu
                    .first_ancestor_with_type(ObjectType::Package)
                    .map(|p| os_index(p).unwrap_or(p.logical_index() as u32)),
                numa: numa_nodes
                    .iter()
                    .find(|n| n.cpus.contains(cpu))
                    .map(|n| n.node),
                siblings: core.map(to_cpuset).unwrap_or(cpus),
            })
        })
        .collect();
    pus.sort_by_key(|p| p.cpu);

    let mut nic_locality = NicLocality::new();
    for dev in topo.objects_with_type(ObjectType::OSDevice) {
        let is_net = matches!(dev.attributes(),
            Some(ObjectAttributes::OSDevice(a)) if a.device_type() == OSDeviceType::Network);
        let Some(name) = dev.name().and_then(|n| n.to_str().ok()) else {
            continue;
        };
        if !is_net {
            continue;
        }
        let Some(anc) = dev.first_non_io_ancestor() else {
            continue;
        };
        let node = anc
            .nodeset()
            .and_then(|ns| {
                // A device hanging off the machine root "belongs" to every
                // node: that is no locality at all.
                (ns.weight() == Some(1)).then(|| ns.first_set())?
            })
            .map(|i| usize::from(i) as u32);
        let cpus = to_cpuset(anc);
        nic_locality.insert(name.to_string(), (node, Some(cpus)));
    }
    Cpus {
        source,
        pus,
        numa_nodes,
        packages,
        caches,
        nic_locality,
        notes: Vec::new(),
    }
}

/// CPU structure from `/sys/devices/system/{cpu,node}`: enough for the lint
/// (PU, core siblings, package, node) when no hwloc description exists.
fn load_sysfs(root: &Sysroot) -> anyhow::Result<Cpus> {
    let cpu_dir = root.path("/sys/devices/system/cpu");
    let possible = root
        .read_opt("/sys/devices/system/cpu/present")
        .or_else(|| root.read_opt("/sys/devices/system/cpu/online"))
        .with_context(|| {
            format!(
                "no hwloc description and {} has neither 'present' nor 'online': cannot tell which CPUs exist \
                 (give --hwloc-xml or --hwloc-synthetic)",
                cpu_dir.display()
            )
        })?;
    let cpus = CpuSet::parse_list(&possible)
        .map_err(|e| anyhow::anyhow!("{}/present: {e}", cpu_dir.display()))?;
    let mut numa_nodes = Vec::new();
    if let Ok(rd) = std::fs::read_dir(root.path("/sys/devices/system/node")) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Some(n) = name
                .strip_prefix("node")
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let list =
                crate::sys::sysroot::read_string_bounded(&e.path().join("cpulist"), MAX_FILE)
                    .unwrap_or_default();
            numa_nodes.push(NumaNode {
                node: n,
                cpus: CpuSet::parse_list(&list)
                    .with_context(|| e.path().join("cpulist").display().to_string())?,
                memory_bytes: None,
            });
        }
    }
    numa_nodes.sort_by_key(|n| n.node);
    let mut pus = Vec::new();
    let mut packages: BTreeMap<u32, CpuSet> = BTreeMap::new();
    let mut cores: Vec<CpuSet> = Vec::new();
    for cpu in cpus.iter() {
        let t = format!("/sys/devices/system/cpu/cpu{cpu}/topology");
        let siblings = root
            .read_opt(format!("{t}/thread_siblings_list"))
            .or_else(|| root.read_opt(format!("{t}/core_cpus_list")))
            .and_then(|s| CpuSet::parse_list(&s).ok())
            .unwrap_or_else(|| CpuSet::from_cpus([cpu]));
        let package = root
            .read_opt(format!("{t}/physical_package_id"))
            .and_then(|s| s.parse::<u32>().ok());
        if let Some(p) = package {
            packages.entry(p).or_default().insert(cpu);
        }
        let core = match cores.iter().position(|c| *c == siblings) {
            Some(i) => i,
            None => {
                cores.push(siblings.clone());
                cores.len() - 1
            }
        };
        pus.push(Pu {
            cpu,
            core: Some(core as u32),
            package,
            numa: numa_nodes
                .iter()
                .find(|n| n.cpus.contains(cpu))
                .map(|n| n.node),
            siblings,
        });
    }
    Ok(Cpus {
        source: "sysfs".into(),
        pus,
        numa_nodes,
        packages: packages
            .into_iter()
            .map(|(package, cpus)| Package { package, cpus })
            .collect(),
        caches: Vec::new(),
        nic_locality: NicLocality::new(),
        notes: Vec::new(),
    })
}
