//! Fuzzing the recording reader: random bytes and mutated valid files must
//! give an error or warnings naming an offset, never a panic. Inputs that
//! ever broke the reader live in tests/golden/crashers/ and are replayed by
//! `crashers_stay_fixed` (proptest also keeps its own seeds in
//! tests/record_fuzz.proptest-regressions).

use std::path::Path;

use nettop::record::synth;
use nettop::record::{Meta, Recording, Writer};
use proptest::prelude::*;

fn valid(compressed: bool) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v.rec");
    let mut w = Writer::create(&p, compressed, false).unwrap();
    w.write_meta(&Meta {
        host: synth::host(2),
        ..Default::default()
    })
    .unwrap();
    for k in 1..=3 {
        w.write_sample(&synth::sample(k, 3, 2)).unwrap();
    }
    w.finish("count").unwrap();
    std::fs::read(&p).unwrap()
}

/// Opens `bytes` as a file and reads everything; panics only on a reader bug.
fn exercise(bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("fuzz.rec");
    std::fs::write(&p, bytes).unwrap();
    match Recording::open(&p) {
        Ok(rec) => {
            for w in rec.warnings() {
                assert!(w.offset <= bytes.len() as u64, "{w:?}");
            }
            for i in 0..rec.len() {
                if let Err(e) = rec.get(i) {
                    let m = format!("{e:#}");
                    assert!(m.contains("fuzz.rec") && m.contains("offset"), "{m}");
                }
                let _ = rec.unix_ms(i);
            }
            let _ = rec.topology();
            let _ = rec.index_at(0);
        }
        Err(e) => {
            let m = format!("{e:#}");
            assert!(m.contains("fuzz.rec") && m.contains("offset"), "{m}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        exercise(&bytes);
    }

    #[test]
    fn random_bytes_after_a_valid_header(tail in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let mut b = valid(false)[..16].to_vec();
        b.extend_from_slice(&tail);
        exercise(&b);
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
        exercise(&b);
    }

    #[test]
    fn smashed_length_fields(compressed in any::<bool>(), which in 0usize..5, len in any::<u32>()) {
        let mut b = valid(compressed);
        let starts: Vec<usize> = (0..b.len() - 4).filter(|&i| b[i..i + 4] == *b"NTRC").collect();
        let s = starts[which % starts.len()];
        b[s + 4..s + 8].copy_from_slice(&len.to_le_bytes());
        exercise(&b);
    }
}

#[test]
fn crashers_stay_fixed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/crashers");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        exercise(&std::fs::read(&p).unwrap());
        n += 1;
    }
    assert!(n > 0, "no crasher corpus in {}", dir.display());
}
