//! Fuzzing the recording reader: random bytes, mutated valid files and
//! structured damage (bit flips in chosen fields, length and type damage,
//! floods of crafted record headers) must give an error or warnings naming
//! an offset, never a panic, and cost work linear in the file size:
//! [`Recording::bytes_examined`] is checked against a fixed multiple of the
//! size for every input (deterministic, unlike a timer), with a generous
//! wall-clock backstop. Inputs that ever broke the reader live in
//! tests/golden/crashers/ and are replayed by `crashers_stay_fixed`
//! (proptest also keeps its own seeds in
//! tests/record_fuzz.proptest-regressions). The whole file runs in well
//! under a minute.

use std::path::Path;
use std::time::{Duration, Instant};

use nettop::record::synth;
use nettop::record::{Meta, Recording, Writer};
use proptest::prelude::*;

/// Work allowed per input byte while indexing (see the reader's
/// RESYNC_BUDGET: candidates may cost 2x, plus scanning, headers and the
/// checks of records that are not samples).
const WORK_PER_BYTE: u64 = 8;
const WORK_SLACK: u64 = 64 << 10;

fn valid(compressed: bool) -> Vec<u8> {
    valid_with(3, compressed, false)
}

fn valid_with(samples: u64, compressed: bool, topology: bool) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v.rec");
    let mut w = Writer::create(&p, compressed, false).unwrap();
    w.write_meta(&Meta {
        host: synth::host(2),
        ..Default::default()
    })
    .unwrap();
    if topology {
        w.write_topology(br#"{"source":"synth"}"#).unwrap();
    }
    for k in 1..=samples {
        w.write_sample(&synth::sample(k, 3, 2)).unwrap();
    }
    w.finish("count").unwrap();
    std::fs::read(&p).unwrap()
}

/// Offsets of the record markers.
fn markers(b: &[u8]) -> Vec<usize> {
    (16..b.len().saturating_sub(3))
        .filter(|&i| &b[i..i + 4] == b"NTRC")
        .collect()
}

/// The damage itself never panics: a marker in the file's last bytes
/// (found by a CI run's `structured_damage`, after a cut) has no type or
/// length field to damage.
#[test]
fn damage_to_a_cut_header_is_a_no_op() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut any_index = || {
        any::<prop::sample::Index>()
            .new_tree(&mut runner)
            .expect("an index")
            .current()
    };
    let (i, j) = (any_index(), any_index());
    let cut: Vec<u8> = [vec![0u8; 16], b"NTRC".to_vec(), vec![1, 2]].concat();
    for d in [Damage::Length(i, 7), Damage::Type(j, 3)] {
        let mut b = cut.clone();
        apply(&mut b, &d);
        assert_eq!(b, cut, "{d:?}");
    }
}

/// Opens `bytes` as a file and reads everything; panics only on a reader
/// bug or when indexing costs more than linear work. Returns the number of
/// samples that decode.
fn exercise(bytes: &[u8]) -> Option<usize> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("fuzz.rec");
    std::fs::write(&p, bytes).unwrap();
    let t0 = Instant::now();
    let opened = Recording::open(&p);
    let took = t0.elapsed();
    let backstop = Duration::from_secs(5) + Duration::from_nanos(200 * bytes.len() as u64);
    assert!(
        took < backstop,
        "indexing {} bytes took {took:?}",
        bytes.len()
    );
    match opened {
        Ok(rec) => {
            let limit = WORK_PER_BYTE * bytes.len() as u64 + WORK_SLACK;
            assert!(
                rec.bytes_examined() <= limit,
                "indexing {} bytes examined {} (limit {limit})",
                bytes.len(),
                rec.bytes_examined()
            );
            for w in rec.warnings() {
                assert!(w.offset <= bytes.len() as u64, "{w:?}");
            }
            let mut good = 0;
            for i in 0..rec.len() {
                match rec.get(i) {
                    Ok(_) => good += 1,
                    Err(e) => {
                        let m = format!("{e:#}");
                        assert!(m.contains("fuzz.rec") && m.contains("offset"), "{m}");
                    }
                }
                let _ = rec.unix_ms(i);
            }
            let _ = rec.topology();
            let _ = rec.index_at(0);
            Some(good)
        }
        Err(e) => {
            let m = format!("{e:#}");
            assert!(m.contains("fuzz.rec") && m.contains("offset"), "{m}");
            None
        }
    }
}

/// Structured damage to a valid file.
#[derive(Clone, Debug)]
enum Damage {
    /// Flip one bit at a position.
    Flip(prop::sample::Index, u8),
    /// Overwrite a record's type byte.
    Type(prop::sample::Index, u8),
    /// Add a delta to a record's length field.
    Length(prop::sample::Index, i32),
    /// Zero a range (power loss).
    Zero(prop::sample::Index, u16),
    /// Insert crafted record headers, each claiming a payload to the end
    /// of the file, every `step` bytes.
    Flood(prop::sample::Index, u16, u8),
    /// Cut the file.
    Truncate(prop::sample::Index),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (any::<prop::sample::Index>(), 0u8..8).prop_map(|(i, b)| Damage::Flip(i, b)),
        (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, t)| Damage::Type(i, t)),
        (any::<prop::sample::Index>(), any::<i32>()).prop_map(|(i, d)| Damage::Length(i, d)),
        (any::<prop::sample::Index>(), 1u16..512).prop_map(|(i, n)| Damage::Zero(i, n)),
        (any::<prop::sample::Index>(), 1u16..2000, 8u8..64)
            .prop_map(|(i, n, step)| Damage::Flood(i, n, step)),
        any::<prop::sample::Index>().prop_map(Damage::Truncate),
    ]
}

fn apply(b: &mut Vec<u8>, d: &Damage) {
    // A file cut to nothing has no byte left to damage (the reader's
    // answer to an empty file is tested on its own).
    if b.is_empty() {
        return;
    }
    let m = markers(b);
    match d {
        Damage::Flip(i, bit) => {
            let i = i.index(b.len());
            b[i] ^= 1 << bit;
        }
        // A marker in the file's last bytes (a frame whose header the file
        // cuts) has no type or length to damage: nothing to do then.
        Damage::Type(i, t) if !m.is_empty() => {
            if let Some(x) = b.get_mut(m[i.index(m.len())] + 8) {
                *x = *t;
            }
        }
        Damage::Length(i, delta) if !m.is_empty() => {
            let at = m[i.index(m.len())] + 4;
            if let Some(field) = b.get_mut(at..at + 4) {
                let len = u32::from_le_bytes(field.try_into().unwrap());
                field.copy_from_slice(&len.wrapping_add_signed(*delta).to_le_bytes());
            }
        }
        Damage::Zero(i, n) => {
            let s = i.index(b.len());
            let e = (s + usize::from(*n)).min(b.len());
            b[s..e].fill(0);
        }
        Damage::Flood(i, n, step) => {
            let at = i.index(b.len());
            let step = usize::from(*step).max(24);
            let total = b.len() + usize::from(*n) * step;
            let mut flood = Vec::with_capacity(usize::from(*n) * step);
            for k in 0..usize::from(*n) {
                let off = at + k * step;
                let claim = (total - off - 24) as u32;
                let mut h = vec![0u8; step];
                h[..4].copy_from_slice(b"NTRC");
                h[4..8].copy_from_slice(&claim.to_le_bytes());
                h[8] = 2;
                h[20..24].copy_from_slice(&(k as u32).to_le_bytes());
                flood.extend_from_slice(&h);
            }
            b.splice(at..at, flood);
        }
        Damage::Truncate(i) => {
            let c = i.index(b.len());
            b.truncate(c);
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = exercise(&bytes);
    }

    #[test]
    fn random_bytes_after_a_valid_header(tail in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let mut b = valid(false)[..16].to_vec();
        b.extend_from_slice(&tail);
        let _ = exercise(&b);
    }

    #[test]
    fn mutated_valid_files(
        compressed in any::<bool>(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..8),
        cut in any::<prop::sample::Index>(),
        do_cut in any::<bool>(),
    ) {
        let mut b = valid(compressed);
        for (i, x) in flips {
            let i = i.index(b.len());
            b[i] ^= x;
        }
        if do_cut {
            let c = cut.index(b.len());
            b.truncate(c);
        }
        let _ = exercise(&b);
    }

    #[test]
    fn smashed_length_fields(compressed in any::<bool>(), which in 0usize..5, len in any::<u32>()) {
        let mut b = valid(compressed);
        let starts: Vec<usize> = (0..b.len() - 4).filter(|&i| b[i..i + 4] == *b"NTRC").collect();
        let s = starts[which % starts.len()];
        b[s + 4..s + 8].copy_from_slice(&len.to_le_bytes());
        let _ = exercise(&b);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Any mix of structured damage: no panic, linear work.
    #[test]
    fn structured_damage(
        samples in 1u64..8,
        compressed in any::<bool>(),
        topology in any::<bool>(),
        damages in proptest::collection::vec(damage(), 1..5),
    ) {
        let mut b = valid_with(samples, compressed, topology);
        for d in &damages {
            apply(&mut b, d);
        }
        exercise(&b);
    }

    /// One flipped bit anywhere after the host record costs at most the
    /// one snapshot it hit. Half the flips land in a record header (marker,
    /// length, type, encoding, time, checksum), which random positions
    /// would rarely hit.
    #[test]
    fn one_bit_loses_at_most_one_snapshot(
        compressed in any::<bool>(),
        topology in any::<bool>(),
        in_header in any::<bool>(),
        pos in any::<prop::sample::Index>(),
        field in 0usize..24,
        bit in 0u8..8,
    ) {
        let samples = 6;
        let mut b = valid_with(samples, compressed, topology);
        let m = markers(&b);
        let i = if in_header {
            m[1 + pos.index(m.len() - 1)] + field
        } else {
            m[1] + pos.index(b.len() - m[1])
        };
        b[i] ^= 1 << bit;
        let good = exercise(&b).expect("opens");
        prop_assert!(good + 1 >= samples as usize, "byte {i} bit {bit}: {good} of {samples} left");
    }
}

/// The crafted file of the issue, scaled down: overlapping headers each
/// claiming the rest of the file made resync checksum O(n²) bytes.
#[test]
fn crafted_candidate_flood_is_linear() {
    let mut b = valid_with(2, false, false);
    let m = markers(&b);
    b.truncate(m[2]);
    b.extend_from_slice(b"damage!!");
    let total = 2 << 20;
    while b.len() + 24 <= total {
        let claim = (total - b.len() - 24) as u32;
        b.extend_from_slice(b"NTRC");
        b.extend_from_slice(&claim.to_le_bytes());
        b.extend_from_slice(&[2, 0, 0, 0]);
        b.extend_from_slice(&[0; 12]);
    }
    b.resize(total, 0);
    exercise(&b);
}

#[test]
fn crashers_stay_fixed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/crashers");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let _ = exercise(&std::fs::read(&p).unwrap());
        n += 1;
    }
    assert!(n > 0, "no crasher corpus in {}", dir.display());
}

/// Regressions of issue 10: one byte of type or length damage in the
/// 3-sample golden file costs exactly the damaged snapshot.
#[test]
fn damage_crashers_lose_one_snapshot() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/crashers");
    for name in [
        "type-byte-high-bit.bin",
        "length-plus-7.bin",
        "length-minus-7.bin",
    ] {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        assert_eq!(exercise(&bytes), Some(2), "{name}");
    }
}
