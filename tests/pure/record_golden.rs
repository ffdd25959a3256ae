//! Recordings written by format version 1 must stay readable forever. The
//! files under tests/golden/ were written once by `regenerate_golden` (run it
//! only when adding a NEW golden for a new format version; never rewrite an
//! old one) and their decoded contents are pinned by insta snapshots.

use std::path::{Path, PathBuf};

use nettop::record::synth;
use nettop::record::{Meta, Recording, Writer, format};

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

#[test]
#[ignore = "writes tests/golden; run by hand for a new format version only"]
fn regenerate_golden() {
    for (name, z) in [("v1.rec", false), ("v1.rec.zst", true)] {
        let p = golden(name);
        let _ = std::fs::remove_file(&p);
        let mut w = Writer::create(&p, z, false).unwrap();
        w.write_meta(&Meta {
            format: format::VERSION,
            writer: "nettop 0.1.0".into(),
            created_unix_ms: 1_700_000_000_000,
            interval_s: 1.0,
            host: synth::host(2),
            part: 0,
        })
        .unwrap();
        w.write_topology(b"<?xml version=\"1.0\"?><topology/>")
            .unwrap();
        for k in 1..=3 {
            w.write_sample(&synth::sample(k, 4, 2)).unwrap();
        }
        w.finish("count").unwrap();
    }
}

#[test]
fn golden_v1_stays_readable() {
    for name in ["v1.rec", "v1.rec.zst"] {
        let rec = Recording::open(golden(name)).unwrap();
        assert!(rec.warnings().is_empty(), "{name}: {:?}", rec.warnings());
        assert!(rec.closed_cleanly());
        assert_eq!(rec.version(), 1);
        assert_eq!(rec.len(), 3);
        assert_eq!(rec.host().hostname, "synth");
        assert_eq!(
            rec.topology().unwrap().as_deref(),
            Some(&b"<?xml version=\"1.0\"?><topology/>"[..])
        );
        let samples: Vec<_> = (0..rec.len()).map(|i| rec.get(i).unwrap()).collect();
        assert_eq!(rec.unix_ms(2), Some(samples[2].unix_ms));
        // Both encodings hold the same data; one snapshot pins it.
        insta::with_settings!({snapshot_path => concat!(env!("CARGO_MANIFEST_DIR"), "/snapshots"), prepend_module_to_snapshot => false}, {
            insta::assert_json_snapshot!("record_golden_v1", (rec.meta(), &samples));
        });
        // Frames compute from the old file (the model may change; the file may not).
        let f = nettop::model::compute(rec.host(), &samples[0], &samples[1]);
        assert_eq!(f.seq, 2);
        assert!(!f.processes.is_empty());
        // Written before command lines were collected: none, and no error.
        assert!(
            samples
                .iter()
                .all(|s| s.tasks.iter().all(|t| t.cmdline.is_empty()))
        );
        assert!(f.processes.iter().all(|p| p.cmdline.is_empty()));
        // Nor memory, load and uptime: the header says n/a.
        assert!(samples.iter().all(|s| s.system.is_none()));
        assert!(f.system.is_none());
        // Nor memory, priorities or MemTotal: unknown, never 0.
        assert_eq!(rec.host().mem_total_bytes, None);
        for p in &f.processes {
            assert_eq!(
                (p.res_bytes, p.virt_bytes, p.shr_bytes, p.mem_pct),
                (None, None, None, None)
            );
            assert_eq!((p.priority, p.nice), (None, None));
        }
    }
}

/// The golden recording through `--replay -b` and `--json` of the real
/// binary: the htop columns print `-` and JSON `null` for what it never
/// recorded, TIME+ (from the recorded ticks) a time.
#[test]
fn golden_v1_replays_with_memory_unknown() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nettop"))
        .args(["--replay"])
        .arg(golden("v1.rec"))
        .args(["-b", "-n", "1"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let h = lines
        .iter()
        .position(|l| l.trim_start().starts_with("PID ") && l.contains("RES"))
        .unwrap_or_else(|| panic!("no task header:\n{text}"));
    let cols: Vec<&str> = lines[h].split_whitespace().collect();
    let at = |name: &str| cols.iter().position(|c| *c == name).unwrap();
    let row: Vec<&str> = lines[h + 1].split_whitespace().collect();
    for c in ["PRI", "NI", "VIRT", "RES", "SHR", "MEM%"] {
        assert_eq!(row[at(c)], "-", "{c} in {}", lines[h + 1]);
    }
    assert!(row[at("TIME+")].contains(':'), "{}", lines[h + 1]);

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nettop"))
        .args(["--replay"])
        .arg(golden("v1.rec"))
        .args(["-b", "-n", "1", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let json = String::from_utf8_lossy(&out.stdout);
    let f: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    let p = &f["processes"][0];
    for k in [
        "res_bytes",
        "virt_bytes",
        "shr_bytes",
        "mem_pct",
        "priority",
        "nice",
    ] {
        assert!(p[k].is_null(), "{k}: {p}");
    }
}

/// A reader meets record types from the future: optional ones are skipped
/// with a note, critical ones refuse the file.
#[test]
fn future_record_types() {
    let g = std::fs::read(golden("v1.rec")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut opt = g.clone();
    opt.extend_from_slice(&format::encode_record(0x42, 2, 0, b"future"));
    let p = dir.path().join("opt.rec");
    std::fs::write(&p, &opt).unwrap();
    let rec = Recording::open(&p).unwrap();
    assert_eq!(rec.len(), 3);
    assert!(rec.warnings()[0].message.contains("0x42"));
    let mut crit = g.clone();
    crit.extend_from_slice(&format::encode_record(0x90, 2, 0, b"future"));
    std::fs::write(&p, &crit).unwrap();
    let e = format!("{:#}", Recording::open(&p).unwrap_err());
    assert!(
        e.contains("newer nettop") && e.contains(&format!("offset {}", g.len())),
        "{e}"
    );
}
