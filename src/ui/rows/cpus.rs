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
        // Positions first and names for the three kept only: a thread list
        // of 30,000 busy rows would otherwise copy 30,000 names a frame.
        let tasks = f.finest_rows();
        let mut by_cpu: Vec<Vec<usize>> = vec![Vec::new(); node.len()];
        for (i, t) in tasks.iter().enumerate() {
            if t.stolen_pct >= 1.0
                && let Some(v) = by_cpu.get_mut(t.last_cpu as usize)
            {
                v.push(i);
            }
        }
        let by_stolen = |a: &usize, b: &usize| {
            let (a, b) = (&tasks[*a], &tasks[*b]);
            b.stolen_pct
                .total_cmp(&a.stolen_pct)
                .then_with(|| a.comm.cmp(&b.comm))
        };
        let by_cpu: Vec<Vec<(String, f64)>> = by_cpu
            .into_iter()
            .map(|mut v| {
                if v.len() > 3 {
                    v.select_nth_unstable_by(2, by_stolen);
                    v.truncate(3);
                }
                v.sort_by(by_stolen);
                v.iter()
                    .map(|&i| (tasks[i].comm.clone(), tasks[i].stolen_pct))
                    .collect()
            })
            .collect();
        CpuRows {
            node,
            victims: by_cpu,
        }
    }
}
