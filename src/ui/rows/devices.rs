//! Devices/NAPI view's rows: each interface, then its napi instances (RX
//! queues); and, per interface, what the topology knows (XDP mode, RPS,
//! queue IRQs and where they land) as text cells, made on the data thread.

use std::collections::BTreeMap;

use crate::model::cost::napi_of;
use crate::model::frame::{Frame, NapiView};
use crate::topology::HostTopology;

/// One row of the Devices/NAPI view.
#[derive(Clone, Debug, PartialEq)]
pub enum DevRow {
    /// Interface name and its index in `frame.devices` (if it has counters).
    Device(String, Option<usize>),
    Napi(usize),
}

/// Configuration of one interface for the Devices view, as text cells.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DevTopo {
    /// none / generic / native / offload / ? ; generic on a veth costs
    /// several times native, so it is shown next to the packet rates.
    pub xdp: String,
    /// Union of the RX queues' `rps_cpus`, "-" when RPS is off.
    pub rps: String,
    /// Queue IRQs and the CPUs each lands on ("38→0 39→1"), "-" when none.
    pub irqs: String,
}

/// Each interface (with its namespace when not nettop's), then its napi
/// instances by id; napi instances of no listed device (the backlog) under
/// their own name.
pub fn rows(frame: Option<&Frame>) -> Vec<DevRow> {
    let Some(f) = frame else {
        return Vec::new();
    };
    let mut devs: Vec<(String, Option<usize>)> = f
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| (d.label(), Some(i)))
        .collect();
    let owner = |n: &NapiView| f.devices.iter().position(|d| napi_of(n, d));
    for n in &f.napi {
        if owner(n).is_none() && !devs.iter().any(|(l, _)| *l == n.dev) {
            devs.push((n.dev.clone(), None));
        }
    }
    devs.sort();
    let mut rows = Vec::new();
    for (label, idx) in devs {
        let mut napis: Vec<usize> = (0..f.napi.len())
            .filter(|&i| match (owner(&f.napi[i]), idx) {
                (Some(o), Some(d)) => o == d,
                (None, None) => f.napi[i].dev == label,
                _ => false,
            })
            .collect();
        napis.sort_by_key(|&i| f.napi[i].napi_id);
        rows.push(DevRow::Device(label, idx));
        rows.extend(napis.into_iter().map(DevRow::Napi));
    }
    rows
}

/// The Devices view's configuration columns, per interface.
/// Per CPU, the interrupt work the topology sends there: each device's
/// queue IRQs that land on it and the devices whose RPS steers to it
/// ("eth0 IRQ 38", "veth1 RPS"), for the affinity picker.
pub fn cpu_interrupts(topo: &HostTopology) -> BTreeMap<u32, Vec<String>> {
    let mut by_cpu: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for nic in &topo.nics {
        for &n in &nic.irqs {
            if let Some(i) = topo.irq(n) {
                for cpu in i.lands_on().iter() {
                    by_cpu
                        .entry(cpu)
                        .or_default()
                        .push(format!("{} IRQ {n}", nic.label()));
                }
            }
        }
        for cpu in nic.rps_cpus().iter() {
            by_cpu
                .entry(cpu)
                .or_default()
                .push(format!("{} RPS", nic.label()));
        }
    }
    by_cpu
}

pub fn device_info(topo: &HostTopology) -> BTreeMap<String, DevTopo> {
    topo.nics
        .iter()
        .map(|nic| {
            let xdp = match nic.xdp {
                crate::topology::XdpMode::Unknown => "?",
                crate::topology::XdpMode::None => "none",
                crate::topology::XdpMode::Native => "native",
                crate::topology::XdpMode::Generic => "generic",
                crate::topology::XdpMode::Offload => "offload",
            };
            let rps = nic.rps_cpus();
            let by_irq: BTreeMap<u32, u32> = nic
                .queue_irqs(&topo.irqs)
                .into_iter()
                .map(|(q, i)| (i, q))
                .collect();
            // "q4:104→24 w0 r1": queue, IRQ → where it lands, RSS weight,
            // flow rules steering to it.
            let irqs: Vec<String> = nic
                .irqs
                .iter()
                .map(|&n| {
                    let mut c = match by_irq.get(&n) {
                        Some(q) => format!("q{q}:{n}"),
                        None => n.to_string(),
                    };
                    if let Some(i) = topo.irq(n) {
                        c.push_str(&format!("→{}", i.lands_on()));
                    }
                    if let Some(q) = by_irq.get(&n) {
                        if let Some(w) = nic.rss_weight(*q) {
                            c.push_str(&format!(" w{w}"));
                        }
                        let r = nic.rules_to(*q).len();
                        if r > 0 {
                            c.push_str(&format!(" r{r}"));
                        }
                    }
                    c
                })
                .collect();
            let info = DevTopo {
                xdp: xdp.to_string(),
                rps: if rps.is_empty() {
                    "-".into()
                } else {
                    rps.to_list()
                },
                irqs: if irqs.is_empty() {
                    "-".into()
                } else {
                    irqs.join(" ")
                },
            };
            (nic.label(), info)
        })
        .collect()
}
