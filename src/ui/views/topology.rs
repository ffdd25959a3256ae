//! Topology view: NUMA nodes → L3 → cores → CPUs, NICs with their queue
//! IRQs, and pinned threads, each at its place. A text view: its lines are
//! built in [`rows::topology`](crate::ui::rows::topology) and drawn by
//! `draw_text` in [`views`](super).

pub(crate) const HEADER: &str = "Topology: NUMA nodes → CPUs, where napi polling and pinned tasks sit (pinned task sharing a NET_RX CPU highlighted)";
