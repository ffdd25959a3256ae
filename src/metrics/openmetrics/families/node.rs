//! Folding per-CPU samples into NUMA nodes (`--metrics-cpu per-node`).
//!
//! A 256-CPU host exports each per-CPU family 256 times; most dashboards
//! sum them anyway. Folding here, at the source, keeps that sum and drops
//! the series. The `cpu` label becomes `node`, in the same place, so every
//! other label (mode, vector, context, kind) keeps its series apart.

use std::collections::HashMap;

use super::{Labels, Samples};
use crate::sample::HostInfo;

/// The node label of a CPU: its NUMA node, or `unknown` when the host did
/// not say (a multi-node host whose map was incomplete: nettop does not
/// guess, and one `unknown` series is still bounded).
pub(super) fn node_of(host: &HostInfo, cpu: u32) -> String {
    host.cpu_node
        .get(cpu as usize)
        .map_or_else(|| "unknown".to_string(), u32::to_string)
}

/// `samples` with their `cpu` label replaced by the CPU's node, those that
/// then share every label folded with `f` (a sum, a maximum). Order is
/// kept: each node's series where its first CPU's was. Samples without a
/// `cpu` label pass through unchanged.
pub(super) fn fold(host: &HostInfo, samples: Samples, f: fn(f64, f64) -> f64) -> Samples {
    let mut out: Samples = Vec::new();
    let mut at: HashMap<Labels, usize> = HashMap::new();
    for (mut labels, v) in samples {
        for l in labels.iter_mut().filter(|l| l.0 == "cpu") {
            // The readers wrote this label from a u32; anything else is
            // kept apart as its own node rather than guessed into one.
            let node =
                l.1.parse::<u32>()
                    .map_or_else(|_| "unknown".to_string(), |c| node_of(host, c));
            *l = ("node", node);
        }
        match at.get(&labels).and_then(|&i| out.get_mut(i)) {
            Some(e) => e.1 = f(e.1, v),
            None => {
                at.insert(labels.clone(), out.len());
                out.push((labels, v));
            }
        }
    }
    out
}
