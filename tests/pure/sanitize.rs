//! Every string an untrusted source can fill is cleaned: the sample schema,
//! recording metadata and topologies, poisoned field by field.

use nettop::record::Meta;
use nettop::record::synth;
use nettop::sample::RawSample;
use nettop::sys::sanitize::{Untrusted, clean, is_unsafe};
use nettop::topology::HostTopology;

const EVIL: &str = "\x1b]0;PWN\x07\x1b[2J\nFORGED\r\u{9b}1m\u{7f}\u{202e}x\u{2066}";

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
    s.cgroups = vec![nettop::sample::RawCgroup {
        id: 7,
        path: "/a".into(),
        v1: true,
        cpus: "0-1".into(),
        mem_bytes: Some(1 << 20),
        pod: Some(nettop::sys::cgroup::PodName {
            namespace: "ns".into(),
            name: "web-0".into(),
            container: "nginx".into(),
        }),
    }];
    s.devices_incomplete = Some(nettop::sample::DeviceGap {
        cause: nettop::sample::GapCause::NetnsDenied,
        why: "why".into(),
    });
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
        threads: vec![nettop::topology::ThreadInfo {
            comm: EVIL.into(),
            cgroup: Some(EVIL.into()),
            nics: vec![EVIL.into()],
            ..Default::default()
        }],
        nics: vec![nettop::topology::Nic {
            name: EVIL.into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    t.sanitize();
    assert_clean(&serde_json::to_value(&t).unwrap(), "topology");
    assert_eq!(t.threads[0].comm, clean(EVIL));
}
