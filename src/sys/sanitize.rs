//! The one sanitiser for strings nettop did not write itself.
//!
//! Process names are chosen by whoever starts a process (an unprivileged
//! user can name one `"\e]0;PWN\a\e[2J"`), device names by whoever creates a
//! veth, and a recording may come from anywhere. Printed raw, such a string
//! rewrites root's terminal (batch text, the TUI, CSV on a terminal) or
//! forges a batch line (`'\n'`). Rendering must stay pure and simple, so the
//! cleaning happens once, where these strings enter the model:
//!
//! - the collector's output (live samples and host facts),
//! - recordings as they are read (samples, host facts and topology),
//! - topologies, loaded live or saved and read by the pinning lint.
//!
//! Each type implements [`Untrusted`] next to its own definition.
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

/// Cleans every string reachable in `v`'s serde form. If the round trip
/// were ever impossible, the strings that would have leaked are the
/// caller's types' fault; such a type must implement [`Untrusted`] by hand.
pub fn sanitize_via_json<T: Serialize + DeserializeOwned>(v: &mut T) {
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

    #[test]
    fn clean_replaces_exactly_the_unsafe_characters() {
        let evil = "\x1b]0;PWN\x07\x1b[2J\nFORGED\r\u{9b}1m\u{7f}\u{202e}x\u{2066}";
        assert_eq!(clean(evil), "?]0;PWN??[2J?FORGED??1m??x?");
        assert!(matches!(clean("ksoftirqd/0 äöü 中文"), Cow::Borrowed(_)));
        assert_eq!(clean("tab\there"), "tab?here");
    }
}
