//! Devices/NAPI view's rows: each interface, then its napi instances (RX
//! queues), as batch text lists them; and, per CPU, the interrupt work the
//! topology sends there, for the affinity picker.

use std::collections::BTreeMap;

use crate::model::frame::Frame;
use crate::output::devices::DevLine;
use crate::topology::HostTopology;

/// Each interface (with its namespace when not nettop's), then its napi
/// instances by id: the lines of the device table batch text prints too
/// ([`crate::output::devices::lines`]).
pub fn rows(frame: Option<&Frame>) -> Vec<DevLine> {
    frame.map_or_else(Vec::new, crate::output::devices::lines)
}

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
