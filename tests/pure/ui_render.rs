//! Snapshot tests of every TUI view and overlay, drawn with ratatui's
//! TestBackend from deterministic Frames (src/ui/fixtures/).

use crate::common;

use common::screen::{app, busy, draw, press, screen, snap};
use crossterm::event::KeyCode;
use nettop::model::devconf::DeviceConfigs;
use nettop::sys::cpuset::CpuSet;
use nettop::topology::{
    Cache, FlowRule, HostConfig, HostTopology, Irq, Nic, NumaNode, Package, Pu, RxQueue, Steering,
    Support, ThreadInfo, XdpMode,
};
use nettop::ui::fixtures;
use nettop::ui::rows::{View, pinning, topology};
use nettop::ui::state::{Extras, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;

#[test]
fn processes_idle_host() {
    let mut a = app(120, 14, true);
    a.push_frame(fixtures::idle_host());
    snap("ui_processes_idle", screen(&a, 120, 14));
}

#[test]
fn processes_busy_host() {
    let a = busy(150, 44);
    let s = screen(&a, 150, 44);
    // The point of the product: openssl shows 98 % in top's column but
    // really got far less, and the row is marked.
    let line = s.lines().find(|l| l.contains("openssl")).unwrap();
    assert!(line.contains("98.0") && line.contains('!'), "{line}");
    snap("ui_processes_busy", s);
}

#[test]
fn processes_busy_host_80_columns_drops_low_priority_columns() {
    let a = busy(80, 24);
    let s = screen(&a, 80, 24);
    assert!(s.contains("TOP%") && s.contains("TRUE%") && s.contains("STOLEN%"));
    assert!(!s.contains("AFFINITY"));
    snap("ui_processes_busy_80x24", s);
}

/// `C`: the Processes view grouped by cgroup, the most robbed first; Enter
/// opens a group onto its processes, `R` puts the least robbed first.
#[test]
fn containers_grouped_by_cgroup_expand_and_reverse() {
    let mut a = app(160, 20, true);
    a.push_frame(fixtures::busy_host_in_cgroups());
    press(&mut a, KeyCode::Char('C'));
    let s = screen(&a, 160, 20);
    let first = s
        .lines()
        .find(|l| l.contains('▸') || l.contains('▾'))
        .unwrap_or_else(|| panic!("{s}"));
    assert!(
        first.contains("docker:5a5a5a5a5a5a"),
        "openssl's container first: {s}"
    );
    assert!(s.contains("pod:a9d0c3b4/containerd:777777777777"), "{s}");
    snap("ui_containers_grouped", s);
    // The top group opens onto its process; ← closes it from there.
    press(&mut a, KeyCode::Enter);
    let s = screen(&a, 160, 20);
    let open = s.lines().position(|l| l.contains("▾ docker:")).unwrap();
    assert!(
        s.lines().nth(open + 1).unwrap().contains("5001 openssl"),
        "{s}"
    );
    snap("ui_containers_expanded", s);
    press(&mut a, KeyCode::Down);
    press(&mut a, KeyCode::Left);
    assert!(!screen(&a, 160, 20).contains("5001 openssl"));
    press(&mut a, KeyCode::Char('R'));
    let s = screen(&a, 160, 20);
    let first = s.lines().find(|l| l.contains('▸')).unwrap();
    assert!(!first.contains("docker:"), "{s}");
    // And back to the task table.
    press(&mut a, KeyCode::Char('C'));
    assert!(screen(&a, 160, 20).contains("COMMAND"));
}

#[test]
fn processes_tree_with_threads() {
    let mut a = busy(150, 44);
    press(&mut a, KeyCode::Char('t'));
    press(&mut a, KeyCode::Char('>')); // sort by TRUE%
    let s = screen(&a, 150, 44);
    assert!(s.contains("├─ vpp_wk") && s.contains("└─ vpp_wk"), "{s}");
    snap("ui_processes_tree_sorted_true", s);
}

#[test]
fn processes_filtered_and_filter_prompt() {
    let mut a = busy(120, 16);
    press(&mut a, KeyCode::Char('/'));
    for c in "ngin".chars() {
        press(&mut a, KeyCode::Char(c));
    }
    snap("ui_filter_prompt", screen(&a, 120, 16));
    press(&mut a, KeyCode::Char('x'));
    press(&mut a, KeyCode::Backspace);
    press(&mut a, KeyCode::Enter);
    snap("ui_processes_filtered_nginx", screen(&a, 120, 16));
}

#[test]
fn cpus_busy_host() {
    let mut a = busy(150, 24);
    press(&mut a, KeyCode::Char('2'));
    assert_eq!(a.view, View::Cpus);
    snap("ui_cpus_busy", screen(&a, 150, 24));
}

#[test]
fn cpus_busy_host_100_columns() {
    let mut a = busy(100, 24);
    press(&mut a, KeyCode::Char('2'));
    snap("ui_cpus_busy_100x24", screen(&a, 100, 24));
}

#[test]
fn devices_busy_host() {
    let mut a = busy(120, 20);
    press(&mut a, KeyCode::Char('3'));
    snap("ui_devices_busy", screen(&a, 120, 20));
}

/// With the topology loaded, device rows gain XDP mode, RPS CPUs and the
/// queue IRQs with the CPUs they land on; interfaces the topology does not
/// know show "-", and before it loads "…".
#[test]
fn devices_with_topology() {
    let mut a = busy(180, 24);
    press(&mut a, KeyCode::Char('3'));
    let before = screen(&a, 180, 24);
    assert!(before.contains("…"), "{before}");
    let mut t = topo_2s();
    t.nics.push(Nic {
        name: "veth-rx".into(),
        is_virtual: true,
        rx_queues: vec![RxQueue {
            queue: 0,
            rps_cpus: CpuSet::parse_list("3,5").unwrap(),
        }],
        xdp: XdpMode::Generic,
        ..Default::default()
    });
    // The pod's end, in its own namespace.
    t.nics.push(Nic {
        name: "eth0".into(),
        netns: "pod-web".into(),
        is_virtual: true,
        driver: Some("veth".into()),
        xdp: XdpMode::None,
        ..Default::default()
    });
    a.set_extras(Extras {
        topology: None,
        pinning: None,
        devices: Some(DeviceConfigs::of(&t)),
        ..Default::default()
    });
    let s = screen(&a, 180, 24);
    assert!(s.contains("q0:120→3 w1 q1:121→9 w3 r1"), "{s}");
    assert!(s.contains("eth0 (netns pod-web)"), "{s}");
    assert!(s.contains("generic"), "{s}");
    snap("ui_devices_topology", s);
}

#[test]
fn topology_from_the_frame_until_hwloc_data_arrives() {
    let mut a = busy(120, 20);
    press(&mut a, KeyCode::Char('4'));
    snap("ui_topology_frame_only", screen(&a, 120, 20));
}

/// The 2-socket host as the topology module describes it.
fn topo_2s() -> HostTopology {
    let set = |s: &str| CpuSet::parse_list(s).unwrap();
    let pus = (0..16)
        .map(|c| Pu {
            cpu: c,
            core: Some(c % 8 + (c / 8) * 8),
            package: Some(c / 8),
            numa: Some(c / 8),
            siblings: CpuSet::from_cpus([c]),
        })
        .collect();
    HostTopology {
        netns: Vec::new(),
        source: "live".into(),
        cpu_source: "hwloc synthetic".into(),
        online: set("0-15"),
        pus,
        numa_nodes: vec![
            NumaNode {
                node: 0,
                cpus: set("0-7"),
                memory_bytes: Some(32 << 30),
            },
            NumaNode {
                node: 1,
                cpus: set("8-15"),
                memory_bytes: Some(32 << 30),
            },
        ],
        packages: vec![
            Package {
                package: 0,
                cpus: set("0-7"),
            },
            Package {
                package: 1,
                cpus: set("8-15"),
            },
        ],
        caches: vec![
            Cache {
                level: 3,
                index: 0,
                cpus: set("0-7"),
                size_bytes: Some(32 << 20),
            },
            Cache {
                level: 3,
                index: 1,
                cpus: set("8-15"),
                size_bytes: Some(32 << 20),
            },
        ],
        host: HostConfig {
            isolcpus: set("3"),
            ..Default::default()
        },
        nics: vec![Nic {
            name: "ens1f0np0".into(),
            driver: Some("mlx5_core".into()),
            pci: Some("0000:81:00.0".into()),
            numa_node: Some(1),
            local_cpus: Some(set("8-15")),
            locality_source: "sysfs".into(),
            rx_queues: (0..2)
                .map(|queue| RxQueue {
                    queue,
                    rps_cpus: CpuSet::new(),
                })
                .collect(),
            irqs: vec![120, 121],
            xdp: XdpMode::Native,
            // One bucket in four to queue 0, DNS steered to queue 1.
            steering: Some(Steering {
                driver: Some("mlx5_core".into()),
                rx_rings: Some(2),
                indir: vec![0, 1, 1, 1],
                rss: Support::Supported,
                rules: vec![FlowRule {
                    location: 1023,
                    flow: "udp4 dst-port 53".into(),
                    queue: Some(1),
                    action: "queue 1".into(),
                }],
                ntuple: Support::Supported,
            }),
            ..Default::default()
        }],
        irqs: vec![
            Irq {
                irq: 120,
                name: "mlx5_comp0@pci:0000:81:00.0".into(),
                nic: Some("ens1f0np0".into()),
                smp_affinity: Some(set("0-15")),
                effective: Some(set("3")),
                ..Default::default()
            },
            Irq {
                irq: 121,
                name: "mlx5_comp1@pci:0000:81:00.0".into(),
                nic: Some("ens1f0np0".into()),
                smp_affinity: Some(set("8-15")),
                effective: Some(set("9")),
                ..Default::default()
            },
        ],
        threads: vec![ThreadInfo {
            pid: 5001,
            tid: 5001,
            comm: "openssl".into(),
            affinity: set("3"),
            last_cpu: Some(3),
            cpu_pct: Some(98.0),
            ..Default::default()
        }],
        notes: vec!["XDP mode needs netlink".into()],
    }
}

#[test]
fn topology_with_hwloc_data() {
    let mut a = busy(120, 40);
    a.set_extras(Extras {
        topology: Some(topology::lines(&topo_2s())),
        pinning: None,
        devices: None,
        ..Default::default()
    });
    press(&mut a, KeyCode::Char('4'));
    let s = screen(&a, 120, 40);
    assert!(s.contains("off the NIC's node"), "{s}");
    snap("ui_topology_hwloc", s);
}

#[test]
fn pinning_view_before_topology_loads() {
    let mut a = busy(120, 12);
    press(&mut a, KeyCode::Char('5'));
    snap("ui_pinning_waiting", screen(&a, 120, 12));
}

#[test]
fn pinning_view_with_live_evidence() {
    let mut a = busy(130, 40);
    let ev = nettop::pinning::Evidence {
        stolen_pct: [(5001, 40.0)].into_iter().collect(),
    };
    let report = nettop::pinning::check(&topo_2s(), &ev);
    a.set_extras(Extras {
        topology: None,
        pinning: Some(pinning::lines(&report)),
        devices: None,
        ..Default::default()
    });
    press(&mut a, KeyCode::Char('5'));
    let s = screen(&a, 130, 40);
    assert!(s.contains("nettop pinning check"), "{s}");
    snap("ui_pinning_findings", s);
}

#[test]
fn help_overlay() {
    let mut a = busy(120, 32);
    press(&mut a, KeyCode::Char('?'));
    let s = screen(&a, 120, 32);
    snap("ui_help", s);
}

#[test]
fn sort_picker_overlay() {
    let mut a = busy(120, 30);
    // Opens on the sort column (TOP%); ONCPU% below it is hidden, so it
    // moves down among the hidden columns and leaves the table.
    press(&mut a, KeyCode::Char('F'));
    press(&mut a, KeyCode::Down);
    press(&mut a, KeyCode::Char(' '));
    snap("ui_sort_picker", screen(&a, 120, 30));
}

#[test]
fn status_line_shows_pause_and_unknown_regime() {
    let mut a = app(120, 10, true);
    let mut f = fixtures::idle_host();
    f.regime = nettop::sample::Regime::Unknown;
    a.push_frame(f);
    press(&mut a, KeyCode::Char('p'));
    let s = screen(&a, 120, 10);
    assert!(s.contains("PAUSED") && s.contains("regime unknown"), "{s}");
}

#[test]
fn status_line_shows_collector_notes() {
    let mut a = app(250, 10, true);
    let mut f = fixtures::idle_host();
    f.health.notes = vec!["device counters from sysfs: rtnetlink socket: denied".into()];
    a.push_frame(f);
    let s = screen(&a, 250, 10);
    assert!(
        s.contains("device counters from sysfs: rtnetlink socket: denied"),
        "{s}"
    );
}

#[test]
fn tiny_terminal_shows_a_note_and_never_panics() {
    let a = busy(10, 5);
    let s = screen(&a, 10, 5);
    assert!(s.contains("too"), "{s}");
    snap("ui_too_small_10x5", s);
    // Every view, every overlay, at every small size: no panic.
    for v in ['1', '2', '3', '4', '5'] {
        for overlay in [None, Some('?'), Some('F')] {
            let mut a = busy(10, 5);
            press(&mut a, KeyCode::Char(v));
            if let Some(o) = overlay {
                press(&mut a, KeyCode::Char(o));
            }
            for w in [1u16, 10, 29, 30, 31, 45, 60] {
                for h in [1u16, 5, 6, 7, 8, 9] {
                    a.resize(w, h);
                    let _ = screen(&a, w, h);
                }
            }
        }
    }
}

#[test]
fn empty_app_before_the_first_frame() {
    let a = app(80, 10, true);
    let s = screen(&a, 80, 10);
    assert!(s.contains("collecting the first interval"), "{s}");
}

fn colours(t: &Terminal<TestBackend>) -> Vec<Color> {
    t.backend()
        .buffer()
        .content()
        .iter()
        .flat_map(|c| [c.fg, c.bg])
        .collect()
}

#[test]
fn no_color_draws_without_any_colour() {
    for v in ['1', '2', '3', '4'] {
        let mut a = busy(150, 40);
        a.theme = Theme::mono();
        press(&mut a, KeyCode::Char(v));
        let t = draw(&a, 150, 40);
        assert!(colours(&t).iter().all(|c| *c == Color::Reset), "view {v}");
    }
}

#[test]
fn colours_stay_within_the_16_colour_palette() {
    for v in ['1', '2', '3', '4'] {
        let mut a = busy(150, 40);
        press(&mut a, KeyCode::Char(v));
        let t = draw(&a, 150, 40);
        let cs = colours(&t);
        assert!(
            cs.iter()
                .all(|c| !matches!(c, Color::Rgb(..) | Color::Indexed(_))),
            "view {v}"
        );
        // And colour is used at all (NET_RX highlight, bars...).
        assert!(cs.iter().any(|c| *c != Color::Reset), "view {v}");
    }
}

#[test]
fn net_rx_cells_are_highlighted() {
    let a = busy(150, 44);
    let t = draw(&a, 150, 44);
    let buf = t.backend().buffer();
    let s = t.backend().to_string();
    // TestBackend lines are quoted: char index - 1 is the x coordinate.
    let lines: Vec<Vec<char>> = s.lines().map(|l| l.chars().collect()).collect();
    let find = |l: &Vec<char>, pat: &str| {
        let p: Vec<char> = pat.chars().collect();
        l.windows(p.len()).position(|w| w == p.as_slice())
    };
    let hx = lines.iter().find_map(|l| find(l, "NET_RX%")).unwrap() as u16 - 1;
    let y = lines
        .iter()
        .position(|l| find(l, "openssl").is_some())
        .unwrap() as u16;
    assert!((hx..hx + 7).any(|x| buf[(x, y)].fg == Color::Magenta));
    // ...and an unaffected task's NET_RX cell is not.
    let y2 = lines
        .iter()
        .position(|l| find(l, "postgres").is_some())
        .unwrap() as u16;
    assert!((hx..hx + 7).all(|x| buf[(x, y2)].fg != Color::Magenta));
}

/// `c`: COMMAND shows each process's full command line, cut to the screen
/// with a marker; kernel threads and processes without one keep their name.
#[test]
fn command_lines_on_c() {
    let mut a = app(270, 16, false);
    let mut f = fixtures::busy_host();
    for p in f.processes.iter_mut().filter(|p| p.comm == "nginx") {
        p.cmdline = vec![
            "nginx:".into(),
            "worker".into(),
            "process".into(),
            format!("--conf=/etc/nginx/sites/{}.conf", p.pid),
            "--a-very-long-argument-that-does-not-fit-on-the-screen".into(),
        ];
    }
    a.push_frame(f);
    let names = screen(&a, 270, 16);
    assert!(!names.contains("worker process"), "{names}");
    press(&mut a, KeyCode::Char('c'));
    let lines = screen(&a, 270, 16);
    assert!(
        lines.contains("nginx: worker process --conf=/etc/nginx/sites/6003.conf"),
        "{lines}"
    );
    assert!(
        lines.contains('…'),
        "a cut command line has a marker: {lines}"
    );
    snap("ui_command_lines", lines);
    press(&mut a, KeyCode::Char('c'));
    let back = screen(&a, 270, 16);
    assert!(!back.contains("worker process"), "{back}");
}

/// `V`: processes under their parents, with top's ancestry lines: nginx's
/// workers under the master, each worker family's grandchild under its
/// parent with a line running on to the second child.
#[test]
fn processes_forest() {
    let mut a = busy(150, 44);
    press(&mut a, KeyCode::Char('V'));
    let s = screen(&a, 150, 44);
    assert!(s.contains("Processes (forest)"), "{s}");
    let lines: Vec<&str> = s.lines().collect();
    let master = lines
        .iter()
        .position(|l| l.contains(" 6000 "))
        .unwrap_or_else(|| panic!("{s}"));
    assert!(lines[master + 1].contains("├─ nginx"), "{s}");
    assert!(lines[master + 3].contains("└─ nginx"), "{s}");
    assert!(s.contains("│  └─ worker-"), "a line past a grandchild: {s}");
    snap("ui_processes_forest", s);
}
