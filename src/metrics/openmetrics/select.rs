//! Which families a scrape leaves out (`--metrics-exclude`): family names
//! and presets, checked here, so a typo is a usage error that lists the
//! valid names instead of a family that silently stays in every scrape.

use super::families;

/// A named set of families to leave out together.
pub struct Preset {
    pub name: &'static str,
    pub families: &'static [&'static str],
    /// What the set is, for `--help` and the error that lists the names.
    pub what: &'static str,
}

/// What node_exporter's default collectors already export from the same
/// kernel files: a fleet that runs both stores them once. `cpu` exports
/// `node_cpu_seconds_total{cpu,mode}` (the same /proc/stat modes) and
/// `node_cpu_online{cpu}`; `softnet` exports
/// `node_softnet_{processed,dropped,times_squeezed,received_rps}_total`;
/// `netdev` exports `node_network_{receive,transmit}_{bytes,packets}_total`
/// and `node_network_receive_drop_total`. node_exporter reads only its own
/// network namespace's devices: nettop's device counters of pods'
/// namespaces go too, which the per-device cost families do not need.
pub const NODE_EXPORTER: Preset = Preset {
    name: "node-exporter",
    families: &[
        "nettop_cpu_online",
        "nettop_cpu_seconds",
        "nettop_softnet_processed_packets",
        "nettop_softnet_dropped_packets",
        "nettop_softnet_time_squeeze",
        "nettop_softnet_rps_received",
        "nettop_network_receive_bytes",
        "nettop_network_transmit_bytes",
        "nettop_network_receive_packets",
        "nettop_network_transmit_packets",
        "nettop_network_receive_dropped_packets",
    ],
    what: "what node_exporter already exports: /proc/stat CPU modes, online CPUs, softnet_stat, device byte/packet/drop counters",
};

pub const PRESETS: &[Preset] = &[NODE_EXPORTER];

/// Every family name a scrape can carry, in output order.
pub fn names() -> Vec<&'static str> {
    families::names()
}

/// The families one `--metrics-exclude` value names: a preset, a family
/// name (`nettop_cpu_seconds`) or the name its samples carry
/// (`nettop_cpu_seconds_total`, `nettop_host_info`), as Prometheus shows
/// them. An unknown name is an error that lists the valid ones: a `String`,
/// since it is clap's `--metrics-exclude` value parser's message as well.
pub fn resolve(arg: &str) -> Result<Vec<&'static str>, String> {
    let arg = arg.trim();
    if let Some(p) = PRESETS.iter().find(|p| p.name == arg) {
        return Ok(p.families.to_vec());
    }
    let all = names();
    let family = [arg, trim_suffix(arg, "_total"), trim_suffix(arg, "_info")];
    if let Some(f) = all.iter().find(|n| family.contains(n)) {
        return Ok(vec![*f]);
    }
    let presets: Vec<String> = PRESETS
        .iter()
        .map(|p| format!("{} ({})", p.name, p.what))
        .collect();
    Err(format!(
        "unknown metric family '{arg}'. Presets: {}. Families: {}",
        presets.join("; "),
        all.join(", ")
    ))
}

fn trim_suffix<'a>(s: &'a str, suffix: &str) -> &'a str {
    s.strip_suffix(suffix).unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_name_only_real_families() {
        let all = names();
        for p in PRESETS {
            for f in p.families {
                assert!(all.contains(f), "{}: {f} is not a family", p.name);
            }
        }
    }

    #[test]
    fn names_presets_and_sample_names_resolve() {
        assert_eq!(
            resolve("nettop_cpu_seconds"),
            Ok(vec!["nettop_cpu_seconds"])
        );
        assert_eq!(
            resolve("nettop_cpu_seconds_total"),
            Ok(vec!["nettop_cpu_seconds"])
        );
        assert_eq!(resolve("nettop_host_info"), Ok(vec!["nettop_host"]));
        assert_eq!(resolve("nettop_cgroups"), Ok(vec!["nettop_cgroups"]));
        assert_eq!(
            resolve("node-exporter").map(|v| v.len()),
            Ok(NODE_EXPORTER.families.len())
        );
        let e = resolve("nettop_cpu_second").unwrap_err();
        assert!(e.contains("node-exporter") && e.contains("nettop_cpu_seconds,"));
    }
}
