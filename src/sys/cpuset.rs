//! CPU sets in the kernel's two spellings: lists ("0-3,8") as in
//! `Cpus_allowed_list`/`smp_affinity_list`, and hex masks ("ff,00000001")
//! as in `rps_cpus`/`smp_affinity`. Shared by the collector, topology and lint.

use std::collections::BTreeSet;
use std::fmt;

use anyhow::{anyhow, bail};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct CpuSet(BTreeSet<u32>);

/// Refuses absurd ranges so a corrupt file cannot make us allocate gigabytes.
const MAX_CPU: u32 = 1 << 16;

impl CpuSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses a cpu list: "0-3,8,10-11", "" (empty), "0-7:2" stride form too.
    pub fn parse_list(s: &str) -> anyhow::Result<Self> {
        let mut set = BTreeSet::new();
        for part in s.trim().split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (range, stride) = match part.split_once(':') {
                Some((r, st)) => {
                    let st: u32 = st.parse().map_err(|_| anyhow!("bad stride in '{part}'"))?;
                    if st == 0 {
                        bail!("zero stride in '{part}'");
                    }
                    (r, st)
                }
                None => (part, 1),
            };
            let (a, b) = match range.split_once('-') {
                Some((a, b)) => (parse_cpu(a, part)?, parse_cpu(b, part)?),
                None => {
                    let c = parse_cpu(range, part)?;
                    (c, c)
                }
            };
            if a > b {
                bail!("descending range '{part}'");
            }
            set.extend((a..=b).step_by(stride as usize));
        }
        Ok(Self(set))
    }

    /// Parses a hex mask as the kernel prints it: comma-separated 32-bit
    /// words, most significant first ("00000000,0000000f").
    pub fn parse_mask(s: &str) -> anyhow::Result<Self> {
        let mut set = BTreeSet::new();
        let words: Vec<&str> = s.trim().split(',').collect();
        let n = words.len();
        for (i, w) in words.iter().enumerate() {
            let w = w.trim();
            if w.is_empty() {
                continue;
            }
            let v = u32::from_str_radix(w, 16)
                .map_err(|_| anyhow!("bad hex mask word '{w}' in '{s}'"))?;
            let base = ((n - 1 - i) as u32) * 32;
            if base >= MAX_CPU {
                bail!("mask '{s}' is too long");
            }
            for bit in 0..32 {
                if v & (1 << bit) != 0 {
                    set.insert(base + bit);
                }
            }
        }
        Ok(Self(set))
    }

    pub fn from_cpus(cpus: impl IntoIterator<Item = u32>) -> Self {
        Self(cpus.into_iter().collect())
    }

    pub fn contains(&self, cpu: u32) -> bool {
        self.0.contains(&cpu)
    }
    pub fn insert(&mut self, cpu: u32) {
        self.0.insert(cpu);
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().copied()
    }
    pub fn first(&self) -> Option<u32> {
        self.0.first().copied()
    }
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.0.is_subset(&other.0)
    }
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        Self(self.0.intersection(&other.0).copied().collect())
    }
    pub fn union(&self, other: &CpuSet) -> CpuSet {
        Self(self.0.union(&other.0).copied().collect())
    }
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        Self(self.0.difference(&other.0).copied().collect())
    }
    pub fn intersects(&self, other: &CpuSet) -> bool {
        self.0.intersection(&other.0).next().is_some()
    }

    /// Kernel mask spelling as `rps_cpus` takes it: 32-bit words, most
    /// significant first, comma-separated ("00000002,00000001"); "0" for
    /// the empty set (RPS off).
    pub fn to_mask(&self) -> String {
        let Some(max) = self.0.iter().last() else {
            return "0".into();
        };
        let words = (max / 32 + 1) as usize;
        let mut w = vec![0u32; words];
        for c in &self.0 {
            w[(c / 32) as usize] |= 1 << (c % 32);
        }
        w.iter()
            .rev()
            .map(|x| format!("{x:08x}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Kernel list spelling, ranges compressed: "0-3,8".
    pub fn to_list(&self) -> String {
        let mut out = String::new();
        let mut it = self.0.iter().copied().peekable();
        while let Some(start) = it.next() {
            let mut end = start;
            while it.peek() == Some(&(end + 1)) {
                end += 1;
                it.next();
            }
            if !out.is_empty() {
                out.push(',');
            }
            if start == end {
                out.push_str(&start.to_string());
            } else {
                out.push_str(&format!("{start}-{end}"));
            }
        }
        out
    }
}

fn parse_cpu(s: &str, part: &str) -> anyhow::Result<u32> {
    let c: u32 = s
        .trim()
        .parse()
        .map_err(|_| anyhow!("bad cpu number in '{part}'"))?;
    if c >= MAX_CPU {
        bail!("cpu number {c} out of range in '{part}'");
    }
    Ok(c)
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_list())
    }
}

impl From<CpuSet> for String {
    fn from(c: CpuSet) -> String {
        c.to_list()
    }
}

impl TryFrom<String> for CpuSet {
    type Error = anyhow::Error;
    fn try_from(s: String) -> anyhow::Result<Self> {
        Self::parse_list(&s)
    }
}

/// The live fast path for `Cpus_allowed_list`: the same kernel mask without
/// having the kernel format the whole ~1.5 KB `status` file (3x faster on a
/// 2,000-thread host). `None` (thread gone, EPERM) falls back to `status`.
pub fn live_affinity(tid: u32) -> Option<CpuSet> {
    // SAFETY: cpu_set_t is plain bits; all-zero is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer and size describe `set`, which outlives the call;
    // the kernel writes at most `size` bytes.
    let rc = unsafe {
        libc::sched_getaffinity(
            tid as libc::pid_t,
            std::mem::size_of::<libc::cpu_set_t>(),
            &mut set,
        )
    };
    if rc != 0 {
        return None;
    }
    let max = (std::mem::size_of::<libc::cpu_set_t>() * 8) as u32;
    // SAFETY: CPU_ISSET only reads `set` at an index below its bit size.
    Some(CpuSet::from_cpus(
        (0..max).filter(|&c| unsafe { libc::CPU_ISSET(c as usize, &set) }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_round_trip() {
        let s = CpuSet::parse_list("0-3,8,10-11").unwrap();
        assert_eq!(s.len(), 7);
        assert_eq!(s.to_list(), "0-3,8,10-11");
        assert_eq!(CpuSet::parse_list("").unwrap().to_list(), "");
        assert_eq!(CpuSet::parse_list("0-7:2").unwrap().to_list(), "0,2,4,6");
    }

    #[test]
    fn masks_are_most_significant_word_first() {
        assert_eq!(
            CpuSet::parse_mask("00000000,0000000f").unwrap().to_list(),
            "0-3"
        );
        assert_eq!(CpuSet::parse_mask("1,00000002").unwrap().to_list(), "1,32");
        assert_eq!(CpuSet::parse_mask("0").unwrap().to_list(), "");
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(CpuSet::parse_list("3-1").is_err());
        assert!(CpuSet::parse_list("x").is_err());
        assert!(CpuSet::parse_list("0-99999999").is_err());
        assert!(CpuSet::parse_mask("zz").is_err());
    }
}
