//! The rings the history is made of: a bfloat16 sample per series per
//! frame, one allocation per ring made only once it holds a non-zero
//! sample, and the slab that finds a task's ring by its row (see the
//! parent module for why).

use std::collections::HashMap;

/// A missing sample. Its sign bit is set, which [`enc`] never produces.
const NONE: u16 = 0xFFFF;

/// bfloat16 of `v`, rounded to nearest; negatives are 0 (no series here
/// is signed), non-finite values are "no sample".
fn enc(v: f64) -> u16 {
    let x = v as f32;
    if !x.is_finite() {
        return NONE;
    }
    let b = x.max(0.0).to_bits();
    // Round to nearest, ties to even, on the 16 bits dropped. A finite
    // non-negative f32 is below 0x7F80_0000, so this cannot overflow.
    ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) as u16
}

fn dec(b: u16) -> Option<f32> {
    (b != NONE).then(|| f32::from_bits(u32::from(b) << 16))
}

/// FNV-1a of a command name: all a ring keeps of its task's identity.
pub(super) fn tag_of(comm: &str) -> u32 {
    comm.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// One entity's last `cap` samples of `N` series.
#[derive(Clone, Debug)]
pub(super) struct Ring<const N: usize> {
    pub(super) tag: u32,
    /// The history's frame count (`History::now`) when its newest
    /// sample was pushed.
    pub(super) last: u32,
    pub(super) len: u16,
    /// Slot of the newest sample.
    pub(super) head: u16,
    /// Missing from a frame that carried its kind of row: whoever has the
    /// key next is someone else.
    pub(super) gone: bool,
    /// Pushes since the last sample that was not zero: at `cap`, every
    /// sample held is zero and `data` can go.
    pub(super) quiet: u16,
    /// `cap × N` samples, frame-major; `None` while every sample held is
    /// zero.
    pub(super) data: Option<Box<[u16]>>,
}

impl<const N: usize> Default for Ring<N> {
    fn default() -> Self {
        Ring {
            tag: 0,
            last: 0,
            len: 0,
            head: 0,
            gone: false,
            quiet: 0,
            data: None,
        }
    }
}

impl<const N: usize> Ring<N> {
    pub(super) fn put(&mut self, cap: usize, v: [u16; N]) {
        let head = if self.len == 0 {
            0
        } else {
            (usize::from(self.head) + 1) % cap
        };
        if v == [0; N] {
            self.quiet = self.quiet.saturating_add(1);
            if usize::from(self.quiet) >= cap {
                self.data = None;
            }
        } else {
            self.quiet = 0;
            if self.data.is_none() {
                // The zeros held so far are the allocation's own zeros.
                self.data = Some(vec![0u16; N * cap].into_boxed_slice());
            }
        }
        if let Some(d) = self.data.as_mut() {
            d[head * N..(head + 1) * N].copy_from_slice(&v);
        }
        self.head = head as u16;
        self.len = (usize::from(self.len) + 1).min(cap) as u16;
    }

    /// Series `s`'s sample `k` pushes back from the newest.
    pub(super) fn get(&self, cap: usize, s: usize, k: usize) -> Option<f32> {
        if k >= usize::from(self.len) || s >= N {
            return None;
        }
        let slot = (usize::from(self.head) + cap - k) % cap;
        match &self.data {
            Some(d) => dec(d[slot * N + s]),
            None => Some(0.0),
        }
    }
}

/// The rings of one kind of task row. A frame lists its tasks in the
/// same order frame after frame (the collector's), so the ring of row `i`
/// is looked for first where row `i`'s was last time: pushing 30,000
/// threads then walks the rings in order instead of hashing into them
/// (a third of the push's cost in the bench). The map finds the rest.
#[derive(Clone, Debug)]
pub(super) struct Slab<const N: usize> {
    pub(super) rings: Vec<(u32, Ring<N>)>,
    /// Key → place in `rings`.
    pub(super) index: HashMap<u32, usize>,
    /// Row `i` of the last frame → place in `rings`; a stale hint is
    /// caught by its key.
    pub(super) order: Vec<usize>,
}

impl<const N: usize> Default for Slab<N> {
    fn default() -> Self {
        Slab {
            rings: Vec::new(),
            index: HashMap::new(),
            order: Vec::new(),
        }
    }
}

impl<const N: usize> Slab<N> {
    pub(super) fn get(&self, key: u32) -> Option<&Ring<N>> {
        self.index.get(&key).map(|&i| &self.rings[i].1)
    }

    /// The ring of row `row` with `key`, made when new.
    pub(super) fn at_row(&mut self, row: usize, key: u32) -> &mut Ring<N> {
        let hint = self.order.get(row).copied();
        let i = match hint {
            Some(i) if self.rings.get(i).is_some_and(|r| r.0 == key) => i,
            _ => {
                let rings = &mut self.rings;
                let i = *self.index.entry(key).or_insert_with(|| {
                    rings.push((key, Ring::default()));
                    rings.len() - 1
                });
                match self.order.get_mut(row) {
                    Some(o) => *o = i,
                    None => self.order.push(i),
                }
                i
            }
        };
        &mut self.rings[i].1
    }

    /// Keeps the rings `keep` says to; the ones moved into a freed place
    /// are re-indexed (their rows' hints go stale and are caught).
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&mut Ring<N>) -> bool) {
        let mut i = 0;
        while i < self.rings.len() {
            if keep(&mut self.rings[i].1) {
                i += 1;
                continue;
            }
            let (gone, _) = self.rings.swap_remove(i);
            self.index.remove(&gone);
            if let Some((moved, _)) = self.rings.get(i) {
                self.index.insert(*moved, i);
            }
        }
    }
}

/// Pushes one frame's sample `v` (`None`: no sample) onto `r`, restarting
/// it when the key changed hands.
pub(super) fn update<const N: usize>(
    r: &mut Ring<N>,
    cap: usize,
    now: u32,
    tag: u32,
    v: Option<[f64; N]>,
) {
    if r.len > 0 && r.last == now {
        return; // the key twice in one frame: the first row counts
    }
    if r.len > 0 && (r.tag != tag || r.gone) {
        r.len = 0;
        r.head = 0;
        r.gone = false;
    }
    r.tag = tag;
    if r.len > 0 {
        let missed = (now.wrapping_sub(r.last) as usize).saturating_sub(1);
        for _ in 0..missed.min(cap) {
            r.put(cap, [NONE; N]);
        }
    }
    r.put(cap, v.map_or([NONE; N], |v| v.map(enc)));
    r.last = now;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bfloat16_keeps_three_digits_and_marks_missing() {
        for v in [0.0, 0.05, 1.0, 12.3, 45.25, 99.9, 100.0, 3200.0, 1.5e6] {
            let back = f64::from(dec(enc(v)).unwrap());
            assert!((back - v).abs() <= v * 0.004, "{v} → {back}");
        }
        assert_eq!(dec(enc(-3.0)), Some(0.0));
        assert_eq!(dec(enc(f64::NAN)), None);
        assert_eq!(
            enc(0.0),
            0,
            "zero is all bits clear: unallocated rings read as zero"
        );
    }
}
