//! CPUs view's rows: the Frame's CPUs as they are, plus what each CPU row
//! needs from the tasks (its NUMA node, the tasks interrupt work is stolen
//! from), derived once per Frame.

use crate::model::frame::Frame;

/// What the CPU rows need from the tasks, derived once per Frame.
#[derive(Clone, Debug, Default)]
pub struct CpuRows {
    /// NUMA node by CPU number.
    pub node: Vec<Option<u32>>,
    /// Top victims (comm, stolen %) by CPU number
    /// ([`crate::output::cpus::victims`], as batch text lists them).
    pub victims: Vec<Vec<(String, f64)>>,
}

impl CpuRows {
    pub fn build(frame: Option<&Frame>) -> CpuRows {
        let Some(f) = frame else {
            return CpuRows::default();
        };
        CpuRows {
            node: crate::output::columns::cpu_nodes(f),
            victims: crate::output::cpus::victims(f),
        }
    }
}
