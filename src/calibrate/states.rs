//! The host's states: a VM's host delivers IPIs in more than one way
//! (the development VM switches every few seconds to minutes between
//! two), each with its own handler time and hidden cost, and the local
//! timer's cost the same in both. The plain IPIs' handler time tells the
//! states apart ([`same_state`]): a calibration the host changed state in
//! is split by it ([`split`]), and the cache keeps the newest costs of each
//! state seen on this boot ([`merge`]) for `model::hidden` to charge each
//! frame the state its own IPIs show.

use crate::sample::calibration::{Basis, Calibration, IpiState, NOISY_SPREAD, same_state};

use super::census::Census;

/// A window's index and its IPIs' handler time.
type Timed = (usize, f64);

/// When the induced windows' IPI handler times fall into two states of
/// the host ([`same_state`] within each, not between them), the windows of
/// each, by index into `each` (windows with fewer than `min_samples`
/// clean IPI gaps do not count): the state of the last such window first
/// (the classes' window follows it), then the other. `None` when they are
/// one state, either state holds a single window, or too few windows have
/// enough IPIs to tell. The development VM's host changes state every few
/// seconds to minutes, so one calibration in ten or so sees both.
pub fn split(each: &[Census], min_samples: u64) -> Option<(Vec<usize>, Vec<usize>)> {
    let timed: Vec<Timed> = each
        .iter()
        .enumerate()
        .filter(|(_, e)| e.single[2].samples >= min_samples && e.single[2].traced_ns > 0.0)
        .map(|(i, e)| (i, e.single[2].traced_ns))
        .collect();
    let &(_, last) = timed.last()?;
    let (own, other): (Vec<Timed>, Vec<Timed>) = timed
        .iter()
        .copied()
        .partition(|(_, t)| same_state(*t, last));
    // Each state in two windows at least, and the other windows one state
    // among themselves: else it is one disturbed window, or noise, rather
    // than a second state.
    let first = other.first()?.1;
    if own.len() < 2 || other.len() < 2 || !other.iter().all(|(_, t)| same_state(*t, first)) {
        return None;
    }
    let index = |g: Vec<Timed>| g.into_iter().map(|(i, _)| i).collect();
    Some((index(own), index(other)))
}

/// Other states kept beside the newest table's own; beyond this the
/// oldest go (a host wandering among more is noise, not states).
const MAX_STATES: usize = 3;

/// A state whose IPI cost was measured while the host disturbed the
/// calibration (spread beyond [`NOISY_SPREAD`] of the cost)
/// is not kept for later frames. Its cost is the disturbance's, and its
/// handler time under load looks like a real state's. On the development
/// VM one such calibration (12.5 µs ±2.8 µs, a quiet one's 6.5–7.4 µs ±0.2)
/// went on charging every later frame in that handler state, and the
/// network oracle came out 11–12 points low in three attempts with fresh
/// calibrations in between.
fn disturbed(s: &IpiState) -> bool {
    s.ipi.spread_ns > NOISY_SPREAD * s.ipi.hidden_ns
}

/// Gives `c`, just measured, the states `old` (the cached table for the
/// same key) knew that `c` was not measured in: the newest calibration of
/// each state, at most [`MAX_STATES`] of them. A state `c` measured again
/// takes `c`'s costs, those of its own other state (`calibrate::table`
/// splits a calibration the host changed state in) included.
pub fn merge(c: &mut Calibration, old: &Calibration) {
    let Some(now) = c.ipi.handler_ns() else {
        return;
    };
    // `c`'s own other state (one the host left during `c`) is the newest.
    let mut seen: Vec<IpiState> = std::mem::take(&mut c.states);
    seen.extend(old.known_states());
    seen.sort_by_key(|s| std::cmp::Reverse(s.measured_unix_ms));
    let mut kept: Vec<IpiState> = Vec::new();
    for s in seen {
        let Some(ns) = s.ipi.handler_ns() else {
            continue;
        };
        if same_state(ns, now) || disturbed(&s) {
            continue;
        }
        let full = kept.len() >= MAX_STATES;
        match kept
            .iter_mut()
            .find(|k| k.ipi.handler_ns().is_some_and(|k| same_state(ns, k)))
        {
            // A state a split calibration saw only in its IPI windows
            // keeps the TLB cost an older calibration measured in it.
            Some(k) if k.tlb.basis != Basis::Measured && s.tlb.basis == Basis::Measured => {
                k.tlb = s.tlb;
            }
            Some(_) => {}
            None if !full => kept.push(s),
            None => {}
        }
    }
    c.states = kept;
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::spin::Gap;
    use super::*;
    use crate::calibrate::census::census;
    use crate::sample::calibration::ClassCost;

    /// A calibration measured at `ms` with plain IPI handlers at
    /// `traced` ns, hiding `hidden` ns each.
    pub(crate) fn cal_at(ms: u64, traced: f64, hidden: f64) -> Calibration {
        let ipi = ClassCost {
            basis: Basis::Measured,
            samples: 1_000,
            traced_ns: traced,
            hidden_ns: hidden,
            spread_ns: 50.0,
        };
        Calibration {
            measured_unix_ms: ms,
            ipi: ipi.clone(),
            tlb: ipi,
            ..Default::default()
        }
    }

    pub(crate) fn handlers(c: &Calibration) -> Vec<f64> {
        c.states.iter().map(|s| s.ipi.traced_ns).collect()
    }

    #[test]
    fn merging_keeps_the_newest_of_each_state_and_at_most_three() {
        let mut old = cal_at(10, 270.0, 5_600.0);
        old.states = vec![
            cal_at(9, 480.0, 7_000.0).own_state(),
            cal_at(8, 500.0, 7_300.0).own_state(),
            cal_at(7, 900.0, 9_000.0).own_state(),
            cal_at(6, 1_500.0, 11_000.0).own_state(),
            cal_at(5, 2_500.0, 13_000.0).own_state(),
        ];
        let mut c = cal_at(11, 280.0, 5_700.0);
        merge(&mut c, &old);
        // 270 is c's own state, 500 the same as the newer 480, and only
        // three others are kept.
        assert_eq!(handlers(&c), [480.0, 900.0, 1_500.0]);
        // A table without a measured IPI cost cannot be placed.
        let mut blind = cal_at(12, 0.0, 0.0);
        blind.ipi.basis = Basis::SameAsIpi;
        merge(&mut blind, &old);
        assert!(blind.states.is_empty());
    }

    #[test]
    fn a_disturbed_state_is_not_kept() {
        let mut old = cal_at(10, 610.0, 12_500.0);
        old.ipi.spread_ns = 2_750.0;
        let quiet = cal_at(9, 480.0, 7_000.0);
        old.states = vec![quiet.own_state()];
        let mut c = cal_at(11, 330.0, 6_500.0);
        merge(&mut c, &old);
        // The older, quiet measurement of that state stays instead.
        assert_eq!(handlers(&c), [480.0]);
        assert_eq!(c.states[0].ipi.hidden_ns, 7_000.0);
        // Within the spread a quiet host shows, it is the newest of its
        // state and kept.
        old.ipi.spread_ns = 500.0;
        let mut c = cal_at(11, 330.0, 6_500.0);
        merge(&mut c, &old);
        assert_eq!(handlers(&c), [610.0]);
    }

    #[test]
    fn a_split_calibrations_other_state_is_the_newest() {
        let old = cal_at(10, 480.0, 7_000.0);
        let mut c = cal_at(20, 270.0, 5_600.0);
        let mut b = cal_at(20, 470.0, 6_900.0).own_state();
        b.tlb = ClassCost::not_measured();
        c.states = vec![b];
        merge(&mut c, &old);
        // The split's IPI cost, the older calibration's TLB cost.
        assert_eq!(handlers(&c), [470.0]);
        assert_eq!(c.states[0].ipi.hidden_ns, 6_900.0);
        assert_eq!(c.states[0].tlb.basis, Basis::Measured);
        assert_eq!(c.states[0].tlb.traced_ns, 480.0);
    }

    /// The census of one induced window of 200 IPI gaps whose handler took
    /// `traced` ns.
    fn window(traced: u64) -> Census {
        let gaps: Vec<Gap> = (0..200)
            .map(|_| Gap {
                at_ns: 0,
                len_ns: 6_000,
                traced_ns: traced,
                intr: [0, 0, 1, 0, 0, 0],
                softirqs: 0,
            })
            .collect();
        census(&gaps)
    }

    #[test]
    fn windows_split_by_the_state_their_ipis_show() {
        let each: Vec<Census> = [270, 280, 480, 490, 265].map(window).into();
        // The last window's state first.
        assert_eq!(split(&each, 50), Some((vec![0, 1, 4], vec![2, 3])));
        let each: Vec<Census> = [270, 280, 480, 490].map(window).into();
        assert_eq!(split(&each, 50), Some((vec![2, 3], vec![0, 1])));
        // One state, within its own wander: no split.
        let each: Vec<Census> = [270, 300, 250, 290].map(window).into();
        assert_eq!(split(&each, 50), None);
        // The others scattered among themselves: noise, not a state.
        let each: Vec<Census> = [700, 480, 1_500, 270, 280].map(window).into();
        assert_eq!(split(&each, 50), None);
        // Windows with too few IPIs do not count.
        assert_eq!(split(&each, 500), None);
        // One window apart, first or last: a disturbed window, not a state.
        let each: Vec<Census> = [480, 270, 280, 265].map(window).into();
        assert_eq!(split(&each, 50), None);
        let each: Vec<Census> = [270, 280, 265, 480].map(window).into();
        assert_eq!(split(&each, 50), None);
    }
}
