//! The plan as text (one line per change with the findings it resolves),
//! JSON (the same content, schema `nettop.plan/1`) and a reviewable shell
//! script. Pure: no I/O.

use std::fmt::Write as _;

use super::{Change, Plan, SCHEMA};

fn codes(c: &Change) -> String {
    if c.resolves.is_empty() {
        "-".into()
    } else {
        c.resolves
            .iter()
            .map(|r| r.code())
            .collect::<Vec<_>>()
            .join(",")
    }
}

fn where_(c: &Change) -> String {
    format!("{}{}", c.target, super::apply::ns_note(&c.netns))
}

pub fn render_text(p: &Plan) -> String {
    let mut o = String::new();
    let applied = p.applied().count();
    let _ = writeln!(
        o,
        "nettop plan: {} change(s), {applied} written by --apply · load: {} · protected CPUs: {}",
        p.changes.len(),
        p.load,
        if p.protected.is_empty() {
            "none".into()
        } else {
            p.protected.to_list()
        }
    );
    if p.changes.is_empty() {
        let _ = writeln!(o, "\nno change needed");
    }
    for (i, c) in p.changes.iter().enumerate() {
        let _ = writeln!(
            o,
            "{:>3}. {:<7} {}: {} -> {}   resolves {}",
            i + 1,
            c.kind.as_str(),
            where_(c),
            c.from,
            c.to,
            codes(c)
        );
        let _ = writeln!(o, "       why: {}", c.why);
    }
    if !p.impossible.is_empty() {
        let _ = writeln!(o, "\nno good layout for:");
        for s in &p.impossible {
            let _ = writeln!(o, "  - {s}");
        }
    }
    if !p.unaddressed.is_empty() {
        let _ = writeln!(o, "\nfindings this plan does not address:");
        for u in &p.unaddressed {
            let _ = writeln!(o, "  - {} {}: {}", u.rule, u.summary, u.reason);
        }
    }
    if !p.victims.is_empty() {
        let v: Vec<String> = p
            .victims
            .iter()
            .map(|v| format!("{} {} (CPU {})", v.tid, v.comm, v.affinity))
            .collect();
        let _ = writeln!(o, "\nthreads it should relieve: {}", v.join(", "));
    }
    o
}

pub fn render_json(p: &Plan) -> String {
    // Plain structs with string keys: serialising cannot fail; a valid
    // document rather than a panic if it ever did.
    serde_json::to_string_pretty(p)
        .unwrap_or_else(|e| format!("{{\"schema\":\"{SCHEMA}\",\"error\":\"{e}\"}}"))
}

/// A script to review and run by hand: every change as a command with
/// its reason; ethtool lines as they are, the kernel command line as a
/// comment. It stops at the first failing command.
pub fn render_sh(p: &Plan) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "#!/bin/sh");
    let _ = writeln!(
        o,
        "# nettop --plan ({}), load: {}. Review before running.",
        p.source, p.load
    );
    let _ = writeln!(
        o,
        "# `nettop --plan --apply` makes the same writes, keeps a revert file and checks the result."
    );
    let _ = writeln!(o, "set -e");
    for c in &p.changes {
        let _ = writeln!(
            o,
            "\n# {} (resolves {}): {}",
            c.kind.as_str(),
            codes(c),
            c.why
        );
        let _ = writeln!(o, "# was: {}", c.from);
        let _ = writeln!(o, "{}", c.command);
    }
    for s in &p.impossible {
        let _ = writeln!(o, "\n# no good layout: {s}");
    }
    o
}
