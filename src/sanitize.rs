//! The one sanitiser for strings nettop did not write itself.
//!
//! Process names are chosen by whoever starts a process (an unprivileged
//! user can name one `"\e]0;PWN\a\e[2J"`), device names by whoever creates a
//! veth, and a recording may come from anywhere. Printed raw, such a string
//! rewrites root's terminal (batch text, the TUI, CSV on a terminal) or
//! forges a batch line (`'\n'`). Rendering must stay pure and simple, so the
//! cleaning happens once, where these strings enter the model:
//!
//! - [`crate::collector::Collector`] output (live samples and host facts),
//! - [`crate::record::Recording`] output (recorded samples, host facts and
//!   topology),
//! - [`crate::topology::load`] and saved topologies read by the pinning lint.
//!
//! Every front end (batch, JSON, CSV, OpenMetrics, the TUI, recordings
//! written from live samples) is then fed clean strings. Each unsafe
//! character becomes `?`, as `ps` and `top` show them: C0 and C1 control
//! characters (ESC, BEL, CR, LF, the 8-bit CSI U+009B …), DEL, and the
//! Unicode bidirectional overrides that reorder what a terminal displays.
//! Invalid UTF-8 never gets this far: readers decode lossily.

use std::borrow::Cow;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::model::raw::{HostInfo, RawSample};
use crate::record::Meta;
use crate::topology::HostTopology;

/// What unsafe characters are replaced with.
pub const REPLACEMENT: char = '?';

/// `true` for characters a terminal acts on instead of showing.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `s` with every unsafe character replaced; borrowed when already clean.
pub fn clean(s: &str) -> Cow<'_, str> {
    if s.chars().any(is_unsafe) {
        Cow::Owned(
            s.chars()
                .map(|c| if is_unsafe(c) { REPLACEMENT } else { c })
                .collect(),
        )
    } else {
        Cow::Borrowed(s)
    }
}

/// Cleans `s` in place (no allocation when it is clean).
pub fn clean_string(s: &mut String) {
    if let Cow::Owned(c) = clean(s) {
        *s = c;
    }
}

/// Data from outside nettop that is cleaned at the boundary.
pub trait Untrusted {
    fn sanitize(&mut self);
}

impl Untrusted for HostInfo {
    fn sanitize(&mut self) {
        clean_string(&mut self.hostname);
        clean_string(&mut self.kernel);
        clean_string(&mut self.boot_id);
        clean_string(&mut self.regime_source);
        clean_string(&mut self.calibration_missing);
        // Read from a cache file or a recording; nested and rare.
        if let Some(c) = &mut self.calibration {
            sanitize_via_json(c);
        }
    }
}

impl Untrusted for Meta {
    fn sanitize(&mut self) {
        clean_string(&mut self.writer);
        self.host.sanitize();
    }
}

/// Field by field: this runs on every live sample, for thousands of tasks.
/// `every_string_field_is_cleaned` fails when a string field is added to
/// the raw sample without being listed here.
impl Untrusted for RawSample {
    fn sanitize(&mut self) {
        for t in self.tasks.iter_mut().chain(self.procs.iter_mut()) {
            clean_string(&mut t.comm);
            clean_string(&mut t.affinity);
            if is_unsafe(t.state) {
                t.state = REPLACEMENT;
            }
        }
        for n in &mut self.notes {
            clean_string(n);
        }
        // Delegated cgroups are named by their (unprivileged) owners.
        for c in &mut self.cgroups {
            clean_string(&mut c.path);
            clean_string(&mut c.cpus);
        }
        for n in &mut self.napi {
            clean_string(&mut n.dev);
        }
        for d in &mut self.devices {
            clean_string(&mut d.name);
            clean_string(&mut d.netns);
        }
        if let Some(h) = &mut self.health {
            for p in &mut h.programs {
                clean_string(&mut p.name);
            }
            for m in &mut h.missing_tracepoints {
                clean_string(m);
            }
            clean_string(&mut h.attach_mode);
            clean_string(&mut h.task_source);
        }
    }
}

/// Generic, through the JSON form: the topology has many nested string
/// fields and is read rarely (once per lint, every 15 s in the TUI).
impl Untrusted for HostTopology {
    fn sanitize(&mut self) {
        sanitize_via_json(self);
    }
}

/// Cleans every string reachable in `v`'s serde form. If the round trip
/// were ever impossible, the strings that would have leaked are the
/// caller's types' fault; such a type must implement [`Untrusted`] by hand.
fn sanitize_via_json<T: Serialize + DeserializeOwned>(v: &mut T) {
    let Ok(mut json) = serde_json::to_value(&*v) else {
        return;
    };
    if !clean_value(&mut json) {
        return;
    }
    if let Ok(clean) = serde_json::from_value(json) {
        *v = clean;
    }
}

/// Cleans the strings (and object keys) of `v`; `true` if anything changed.
fn clean_value(v: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match v {
        Value::String(s) => {
            let dirty = s.chars().any(is_unsafe);
            clean_string(s);
            dirty
        }
        Value::Array(a) => a.iter_mut().fold(false, |acc, x| clean_value(x) | acc),
        Value::Object(o) => {
            let dirty_keys = o.keys().any(|k| k.chars().any(is_unsafe));
            let mut changed = o.values_mut().fold(false, |acc, x| clean_value(x) | acc);
            if dirty_keys {
                let old = std::mem::take(o);
                for (k, x) in old {
                    o.insert(clean(&k).into_owned(), x);
                }
                changed = true;
            }
            changed
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::synth;

    const EVIL: &str = "\x1b]0;PWN\x07\x1b[2J\nFORGED\r\u{9b}1m\u{7f}\u{202e}x\u{2066}";

    #[test]
    fn clean_replaces_exactly_the_unsafe_characters() {
        assert_eq!(clean(EVIL), "?]0;PWN??[2J?FORGED??1m??x?");
        assert!(matches!(clean("ksoftirqd/0 äöü 中文"), Cow::Borrowed(_)));
        assert_eq!(clean("tab\there"), "tab?here");
    }

    /// JSON pointers of every string leaf.
    fn string_leaves(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
        use serde_json::Value;
        match v {
            Value::String(_) => out.push(at),
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    string_leaves(x, format!("{at}/{i}"), out);
                }
            }
            Value::Object(o) => {
                for (k, x) in o {
                    string_leaves(x, format!("{at}/{k}"), out);
                }
            }
            _ => {}
        }
    }

    /// `v` with every string that may hold arbitrary text poisoned (enum
    /// tags such as `"bpf"` must stay valid, so a string whose poisoning
    /// breaks deserialisation is left alone).
    fn poisoned<T: serde::de::DeserializeOwned>(v: &serde_json::Value) -> T {
        let mut v = v.clone();
        let mut leaves = Vec::new();
        string_leaves(&v, String::new(), &mut leaves);
        for p in leaves {
            let Some(serde_json::Value::String(s)) = v.pointer(&p).cloned() else {
                continue;
            };
            if let Some(x) = v.pointer_mut(&p) {
                *x = serde_json::Value::String(format!("{s}{EVIL}"));
            }
            if serde_json::from_value::<T>(v.clone()).is_err()
                && let Some(x) = v.pointer_mut(&p)
            {
                *x = serde_json::Value::String(s);
            }
        }
        serde_json::from_value(v).unwrap()
    }

    fn assert_clean(v: &serde_json::Value, path: &str) {
        use serde_json::Value;
        match v {
            Value::String(s) => assert!(!s.chars().any(is_unsafe), "{path}: {s:?}"),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .for_each(|(i, x)| assert_clean(x, &format!("{path}[{i}]"))),
            Value::Object(o) => o
                .iter()
                .for_each(|(k, x)| assert_clean(x, &format!("{path}.{k}"))),
            _ => {}
        }
    }

    /// Poisons every string a synthetic sample serialises (so a string
    /// field added later is covered as soon as synth fills it) and checks
    /// that the hand-written field list cleans all of them.
    #[test]
    fn every_string_field_is_cleaned() {
        let mut s = synth::sample(3, 4, 2);
        s.tasks[0].state = '\x1b';
        // Fields synth leaves empty, so that they are poisoned too.
        s.procs = s.tasks.clone();
        s.notes = vec!["note".into()];
        s.cgroups = vec![crate::model::raw::RawCgroup {
            id: 7,
            path: "/a".into(),
            v1: true,
            cpus: "0-1".into(),
        }];
        if let Some(h) = &mut s.health {
            h.task_source = "iter/task".into();
        }
        let mut s: RawSample = poisoned(&serde_json::to_value(&s).unwrap());
        assert!(s.tasks[0].comm.contains('\x1b'), "poisoned");
        s.sanitize();
        assert_clean(&serde_json::to_value(&s).unwrap(), "sample");

        let m = Meta {
            host: synth::host(2),
            writer: "nettop".into(),
            ..Default::default()
        };
        let mut m: Meta = poisoned(&serde_json::to_value(&m).unwrap());
        m.sanitize();
        assert_clean(&serde_json::to_value(&m).unwrap(), "meta");
    }

    #[test]
    fn topology_strings_are_cleaned() {
        let mut t = HostTopology {
            source: EVIL.into(),
            threads: vec![crate::topology::ThreadInfo {
                comm: EVIL.into(),
                cgroup: Some(EVIL.into()),
                nics: vec![EVIL.into()],
                ..Default::default()
            }],
            nics: vec![crate::topology::Nic {
                name: EVIL.into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        t.sanitize();
        assert_clean(&serde_json::to_value(&t).unwrap(), "topology");
        assert_eq!(t.threads[0].comm, clean(EVIL));
    }
}
