//! CPUs view's rows: the Frame's CPUs as they are, plus what each CPU row
//! needs from the tasks (its NUMA node, the tasks interrupt work is stolen
//! from), derived once per Frame.

use crate::model::frame::Frame;

/// What the CPU rows need from the tasks, derived once per Frame.
#[derive(Clone, Debug, Default)]
pub struct CpuRows {
    /// NUMA node by CPU number.
    pub node: Vec<Option<u32>>,
    /// Top victims (comm, stolen %) by CPU number.
    pub victims: Vec<Vec<(String, f64)>>,
}

impl CpuRows {
    pub fn build(frame: Option<&Frame>) -> CpuRows {
        let Some(f) = frame else {
            return CpuRows::default();
        };
        let node = crate::output::columns::cpu_nodes(f);
        let mut by_cpu: Vec<Vec<(String, f64)>> = vec![Vec::new(); node.len()];
        for t in f.finest_rows() {
            if t.stolen_pct >= 1.0
                && let Some(v) = by_cpu.get_mut(t.last_cpu as usize)
            {
                v.push((t.comm.clone(), t.stolen_pct));
            }
        }
        for v in &mut by_cpu {
            v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            v.truncate(3);
        }
        CpuRows {
            node,
            victims: by_cpu,
        }
    }
}
