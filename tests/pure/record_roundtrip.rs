//! Recording round trips, crash safety and bad input.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use nettop::app::sampling::record_loop;
use nettop::model::compute;
use nettop::record::synth::{self, Synth};
use nettop::record::{Meta, RecordOptions, Recording, WarningKind, Writer, format};

fn write_file(
    path: &Path,
    compressed: bool,
    n: u64,
    ntasks: usize,
) -> Vec<nettop::sample::RawSample> {
    let samples: Vec<_> = (1..=n).map(|k| synth::sample(k, ntasks, 4)).collect();
    synth::write_recording(path, compressed, 4, samples.iter().cloned()).unwrap();
    samples
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_nettop"))
        .env("NETTOP_CACHE_DIR", common::cache_dir())
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn raw_samples_and_frames_round_trip() {
    for compressed in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(if compressed { "r.zst" } else { "r.rec" });
        let samples = write_file(&p, compressed, 10, 50);
        // Synthetic leaders carry command lines, so the comparisons below
        // cover them.
        assert!(samples[0].tasks.iter().any(|t| !t.cmdline.is_empty()));
        let rec = Recording::open(&p).unwrap();
        assert!(rec.warnings().is_empty(), "{:?}", rec.warnings());
        assert!(rec.closed_cleanly());
        assert_eq!(rec.len(), 10);
        assert_eq!(rec.host(), &synth::host(4));
        for (i, s) in samples.iter().enumerate() {
            assert_eq!(&rec.get(i).unwrap(), s);
            assert_eq!(rec.unix_ms(i), Some(s.unix_ms));
        }
        // Identical model output: frames from the file equal frames from
        // the samples that were written.
        for i in 1..samples.len() {
            let want = compute(&synth::host(4), &samples[i - 1], &samples[i]);
            let got = compute(rec.host(), &rec.get(i - 1).unwrap(), &rec.get(i).unwrap());
            assert_eq!(got, want);
        }
        assert!(rec.verify().is_empty());
        assert_eq!(rec.index_at(samples[4].unix_ms + 500), Some(4));
        assert_eq!(rec.index_at(0), Some(0));
        assert_eq!(rec.index_at(u64::MAX), Some(9));
    }
}

#[test]
fn torn_tail_at_every_byte_loses_only_the_last_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("full.zst");
    // No end record: as if killed after the 4th snapshot landed.
    let mut w = Writer::create(&p, true, false).unwrap();
    w.write_meta(&Meta {
        host: synth::host(2),
        ..Default::default()
    })
    .unwrap();
    let mut ends = vec![];
    for k in 1..=4 {
        w.write_sample(&synth::sample(k, 5, 2)).unwrap();
        ends.push(w.bytes());
    }
    drop(w);
    let full = std::fs::read(&p).unwrap();
    let t = dir.path().join("torn.zst");
    for cut in ends[2] + 1..ends[3] {
        std::fs::write(&t, &full[..cut as usize]).unwrap();
        let rec = Recording::open(&t).unwrap();
        assert_eq!(rec.len(), 3, "cut at {cut}");
        let w = rec.warnings();
        assert_eq!(w.len(), 1, "cut at {cut}: {w:?}");
        assert_eq!(w[0].kind, WarningKind::TornTail);
        assert_eq!(w[0].offset, ends[2]);
        assert_eq!(rec.get(2).unwrap(), synth::sample(3, 5, 2));
    }
    // A power loss can leave a full-length record of zeros at the end.
    let mut z = full.clone();
    for b in &mut z[ends[2] as usize + 30..] {
        *b = 0;
    }
    std::fs::write(&t, &z).unwrap();
    let rec = Recording::open(&t).unwrap();
    assert_eq!(rec.len(), 3);
    assert_eq!(rec.warnings()[0].kind, WarningKind::TornTail);
    // Killed without an end record but nothing torn: a NotClosed note.
    let rec = Recording::open(&p).unwrap();
    assert_eq!(rec.len(), 4);
    assert_eq!(rec.warnings()[0].kind, WarningKind::NotClosed);
}

#[test]
fn corruption_in_the_middle_is_skipped_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.rec");
    write_file(&p, false, 6, 5);
    let rec = Recording::open(&p).unwrap();
    let mut bytes = std::fs::read(&p).unwrap();
    // Find sample 2's header by scanning for the sync marker.
    let starts: Vec<usize> = (0..bytes.len() - 4)
        .filter(|&i| bytes[i..i + 4] == format::SYNC)
        .collect();
    // starts[0] = meta, [1] = sample 0, [3] = sample 2.
    assert_eq!(starts.len(), 1 + 6 + 1);
    drop(rec);

    // (a) Payload byte flipped: index still has it, get() names the offset.
    let mut a = bytes.clone();
    a[starts[3] + 40] ^= 0x55;
    std::fs::write(&p, &a).unwrap();
    let rec = Recording::open(&p).unwrap();
    assert_eq!(rec.len(), 6);
    let err = format!("{:#}", rec.get(2).unwrap_err());
    assert!(err.contains(&format!("offset {}", starts[3])), "{err}");
    assert!(err.contains("c.rec") && err.contains("checksum"), "{err}");
    assert_eq!(rec.verify().len(), 1);
    assert!(rec.get(3).is_ok());

    // (b) Length field smashed to 4 GiB: resynchronised, one record lost.
    bytes[starts[3] + 4..starts[3] + 8].copy_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(&p, &bytes).unwrap();
    let rec = Recording::open(&p).unwrap();
    assert_eq!(rec.len(), 5);
    let w = &rec.warnings()[0];
    assert_eq!(w.kind, WarningKind::Corrupt);
    assert_eq!(w.offset, starts[3] as u64);
    assert!(w.message.contains("limit"), "{}", w.message);
    assert_eq!(rec.get(2).unwrap(), synth::sample(4, 5, 4));

    // The export command exports the rest and exits 2.
    let (code, out, err) = run(&["--replay", p.to_str().unwrap(), "--export", "csv"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.lines().count() > 1);
    assert!(err.contains(&format!("offset {}", starts[3])), "{err}");
}

fn expect_bad(name: &str, bytes: &[u8], want: &str) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    let err = format!("{:#}", Recording::open(&p).unwrap_err());
    assert!(err.contains(name), "{err}");
    assert!(err.contains("offset"), "{err}");
    assert!(err.contains(want), "{name}: {err}");
    for fmt in ["json", "csv", "openmetrics"] {
        let (code, out, stderr) = run(&["--replay", p.to_str().unwrap(), "--export", fmt]);
        assert_eq!(code, 2, "{name} {fmt}: {stderr}");
        assert!(out.is_empty());
        assert!(stderr.contains(name) && stderr.contains(want), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn bad_files_fail_with_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("g.rec");
    write_file(&good, false, 2, 3);
    let g = std::fs::read(&good).unwrap();

    expect_bad("empty.rec", b"", "empty file");
    expect_bad("short.rec", &g[..10], "truncated file header");
    expect_bad(
        "text.rec",
        b"hello world, this is not a recording\n",
        "not a nettop recording",
    );
    expect_bad(
        "plainzstd.rec",
        &zstd::bulk::compress(b"{}", 3).unwrap(),
        "plain zstd stream",
    );
    let mut v = g.clone();
    v[8] = 9;
    let crc = crc32fast::hash(&v[0..12]);
    v[12..16].copy_from_slice(&crc.to_le_bytes());
    expect_bad("future.rec", &v, "format version 9");
    let mut c = g.clone();
    c[10] ^= 1;
    expect_bad("hdrcrc.rec", &c, "corrupted file header");
    expect_bad("onlyheader.rec", &g[..16], "no host record");
    let mut huge = g[..16].to_vec();
    huge.extend_from_slice(&format::SYNC);
    huge.extend_from_slice(&u32::MAX.to_le_bytes());
    huge.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    expect_bad("huge.rec", &huge, "over the 64 MiB limit");
    expect_bad("hosttorn.rec", &g[..40], "unreadable host record");
    let mut crit = g[..16].to_vec();
    crit.extend_from_slice(&format::encode_record(0x81, 0, 0, b"x"));
    expect_bad("critical.rec", &crit, "expected the host record");
}

#[test]
fn unwritable_path_fails_before_collecting() {
    let started = std::time::Instant::now();
    let (code, _, err) = run(&[
        "--record",
        "/proc/nettop-cannot-write.rec",
        "--no-bpf",
        "-n",
        "1",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("/proc/nettop-cannot-write.rec"), "{err}");
    assert!(!err.contains("recording to"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(20));
    // Refuses to overwrite earlier evidence.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("old.rec");
    std::fs::write(&p, b"evidence").unwrap();
    let (code, _, err) = run(&["--record", p.to_str().unwrap(), "--no-bpf", "-n", "1"]);
    assert_eq!(code, 2);
    assert!(err.contains("refusing to overwrite"), "{err}");
    assert_eq!(std::fs::read(&p).unwrap(), b"evidence");
    for (flag, v) in [("--duration", "ten"), ("--max-size", "12Q")] {
        let q = dir.path().join("x.rec");
        let (code, _, err) = run(&["--record", q.to_str().unwrap(), "--no-bpf", flag, v]);
        assert_eq!(code, 2);
        assert!(err.contains(flag), "{err}");
        assert!(!q.exists());
    }
}

#[test]
fn rotation_bounds_disk_use_and_each_file_stands_alone() {
    let dir = tempfile::tempdir().unwrap();
    let p: PathBuf = dir.path().join("rot.zst");
    let opts = RecordOptions {
        interval: Duration::from_millis(1),
        count: Some(60),
        duration: None,
        max_size: Some(16 << 10),
        compressed: true,
        sync: false,
        progress: true,
    };
    let w = Writer::create(&p, true, false).unwrap();
    let mut src = Synth {
        host: synth::host(4),
        k: 0,
        ntasks: 40,
    };
    let stop = AtomicBool::new(false);
    let mut lines = vec![];
    let sum = record_loop(&p, w, &mut src, &opts, &stop, &mut |l| {
        lines.push(l.to_string())
    })
    .unwrap();
    assert_eq!(sum.samples, 60);
    assert!(sum.rotations > nettop::record::MAX_ROTATED, "{sum:?}");
    assert!(
        lines.last().unwrap().starts_with("60 snapshots"),
        "{lines:?}"
    );
    let mut files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(
        files.len() as u32,
        1 + nettop::record::MAX_ROTATED,
        "{files:?}"
    );
    let mut last_k = 0;
    for f in &files {
        let len = std::fs::metadata(f).unwrap().len();
        // Never over the limit, end record included.
        assert!(len <= 16 << 10, "{} is {len} bytes", f.display());
        let rec = Recording::open(f).unwrap();
        assert!(rec.closed_cleanly(), "{}", f.display());
        assert!(rec.len() >= 2);
        // Consecutive within the file; a rotated file starts with the
        // previous file's last snapshot so its first interval is computable.
        let ks: Vec<u64> = (0..rec.len()).map(|i| rec.get(i).unwrap().seq).collect();
        assert!(ks.windows(2).all(|w| w[1] == w[0] + 1), "{ks:?}");
        if f == &p {
            last_k = *ks.last().unwrap();
            assert_eq!(rec.meta().part, sum.rotations);
        }
    }
    assert_eq!(last_k, 60);
}

#[test]
fn stop_flag_closes_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("sig.rec");
    let opts = RecordOptions {
        interval: Duration::from_millis(5),
        count: None,
        duration: Some(Duration::from_secs(600)),
        max_size: None,
        compressed: false,
        sync: true,
        progress: false,
    };
    let stop = AtomicBool::new(false);
    let w = Writer::create(&p, false, true).unwrap();
    let mut src = Synth {
        host: synth::host(2),
        k: 0,
        ntasks: 3,
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(100));
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        let sum = record_loop(&p, w, &mut src, &opts, &stop, &mut |_| {}).unwrap();
        assert_eq!(sum.reason, "signal");
        assert!(sum.samples >= 2);
    });
    let rec = Recording::open(&p).unwrap();
    assert!(rec.closed_cleanly());
    assert!(rec.warnings().is_empty());
}

#[test]
fn duration_and_size_parsing() {
    use nettop::record::{parse_duration, parse_size};
    assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
    assert_eq!(parse_duration("10m").unwrap(), Duration::from_secs(600));
    assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
    assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
    assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
    for bad in ["", "0", "-1", "10x", "m", "1h30", "inf"] {
        assert!(parse_duration(bad).is_err(), "{bad}");
    }
    assert_eq!(parse_size("100M").unwrap(), 100 << 20);
    assert_eq!(parse_size("1G").unwrap(), 1 << 30);
    assert_eq!(parse_size("512k").unwrap(), 512 << 10);
    assert_eq!(parse_size("8192").unwrap(), 8192);
    assert_eq!(parse_size("1GB").unwrap(), 1 << 30);
    assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
    for bad in ["", "1", "12Q", "M", "-5M", "1K"] {
        assert!(parse_size(bad).is_err(), "{bad}");
    }
}

/// A recording carries the calibration of the host that recorded it, so a
/// replay elsewhere charges the same hidden cost and says where it came from.
#[test]
fn recordings_carry_the_calibration() {
    use common::calibration::{from_ipi, measured};
    use nettop::model::frame::Frame;
    use nettop::sample::calibration::Calibration;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cal.rec");
    let mut host = synth::host(4);
    host.calibration = Some(Calibration {
        cpu: 3,
        origin: "measured at start, cached in /var/cache/nettop/calibration.json".into(),
        ..from_ipi(measured(500, 300.0, 2_600.0, 20.0))
    });
    let mut w = Writer::create(&p, false, false).unwrap();
    w.write_meta(&Meta {
        format: format::VERSION,
        writer: "test".into(),
        created_unix_ms: 1,
        interval_s: 1.0,
        host: host.clone(),
        part: 0,
    })
    .unwrap();
    for k in 1..=3 {
        w.write_sample(&synth::sample(k, 8, 4)).unwrap();
    }
    w.finish("count").unwrap();

    let rec = Recording::open(&p).unwrap();
    assert_eq!(rec.host().calibration, host.calibration);
    let (code, out, err) = run(&["--replay", p.to_str().unwrap(), "--export", "json"]);
    assert_eq!(code, 0, "{err}");
    let frames: Vec<Frame> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(frames.len(), 2);
    for f in &frames {
        assert!(
            f.hidden_note.contains("calibrated on CPU 3")
                && f.hidden_note.contains("measured at start"),
            "{}",
            f.hidden_note
        );
        assert!(f.summary.hidden_pct_total > 0.0, "{:?}", f.summary);
        assert!(f.processes.iter().any(|t| t.hidden_pct > 0.0));
    }

    // A recording made before calibrations existed replays without one.
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v1.rec");
    let (code, out, err) = run(&["--replay", golden.to_str().unwrap(), "--export", "json"]);
    assert_eq!(code, 0, "{err}");
    let f: Frame = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    if f.source == nettop::sample::Source::Bpf {
        assert!(
            f.hidden_note.contains("not calibrated"),
            "{}",
            f.hidden_note
        );
    }
    assert!(f.processes.iter().all(|t| t.hidden_pct == 0.0));
}

/// Command lines and parents survive a recording: written with the process
/// rows and read back equal (an argument with spaces, non-ASCII and the
/// cut marker intact; an escape cleaned, as every string read from a file
/// is), and the frames replayed from the file carry them.
#[test]
fn command_lines_and_parents_round_trip() {
    let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let python = argv(&["/usr/bin/python3", "-c", "print('a b')", "naïve\u{2026}"]);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.rec.zst");
    let samples: Vec<_> = (1..=3)
        .map(|k| {
            let mut s = synth::sample_with_cgroups(k, 12, 2, 2);
            s.procs[0].cmdline = python.clone();
            s.procs[0].ppid = 4321;
            s.procs[1].cmdline = argv(&["evil\x1b[2J"]);
            s
        })
        .collect();
    synth::write_recording(&p, true, 2, samples.iter().cloned()).unwrap();

    let rec = Recording::open(&p).unwrap();
    assert!(rec.warnings().is_empty(), "{:?}", rec.warnings());
    for (i, s) in samples.iter().enumerate() {
        let got = rec.get(i).unwrap();
        assert_eq!(got.procs[0].cmdline, python);
        assert_eq!(got.procs[0].ppid, 4321);
        assert_eq!(got.procs[1].cmdline, argv(&["evil?[2J"]));
        let mut want = s.clone();
        want.procs[1].cmdline = argv(&["evil?[2J"]);
        assert_eq!(got, want);
    }
    let f = compute(rec.host(), &rec.get(0).unwrap(), &rec.get(1).unwrap());
    let row = f
        .processes
        .iter()
        .find(|t| t.pid == samples[0].procs[0].tgid);
    let row = row.unwrap();
    assert_eq!((row.ppid, row.cmdline.clone()), (4321, python));
}

/// Memory, load and uptime go into a recording and come back, and the
/// frames computed from it carry them to the header.
#[test]
fn system_figures_round_trip() {
    use nettop::sample::{LoadAvg, MemInfo, RawSystem};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.rec");
    let samples: Vec<_> = (1..=3u64)
        .map(|k| {
            let mut s = synth::sample(k, 5, 2);
            s.system = Some(RawSystem {
                mem: Some(MemInfo {
                    total_kib: 8_000_000,
                    free_kib: 1_000_000 * k,
                    ..Default::default()
                }),
                load: Some(LoadAvg {
                    one: 0.5,
                    five: 0.25,
                    fifteen: 0.125,
                    running: 2,
                    threads: 100,
                }),
                uptime_s: Some(100.0 + k as f64),
            });
            s
        })
        .collect();
    synth::write_recording(&p, false, 2, samples.iter().cloned()).unwrap();
    let rec = Recording::open(&p).unwrap();
    for (i, s) in samples.iter().enumerate() {
        assert_eq!(&rec.get(i).unwrap(), s);
    }
    let f = compute(rec.host(), &rec.get(0).unwrap(), &rec.get(1).unwrap());
    let sys = f.system.expect("the frame's system figures");
    assert_eq!(sys.uptime_s, Some(102.0));
    assert_eq!(sys.load, Some([0.5, 0.25, 0.125]));
    assert_eq!(
        sys.mem.map(|m| (m.total_kib, m.used_kib)),
        Some((8_000_000, 6_000_000))
    );
}
