//! The reference tables nettop's help has no other home for: exit status,
//! environment, files and examples. The man page (`app::generate`) renders
//! them and README carries them row for row (`tests/pure/docs_readme.rs`), so
//! the two cannot drift apart; the columns and keys come from their own
//! tables (`output::columns`, `ui::keymap`) the same way.
//!
//! Each row is (name, text). Text between backticks is code: README shows
//! it as a code span, the man page in bold. That one convention is why a
//! row can be copied into README verbatim. A row may not contain `|`,
//! which would split README's table cell.
//!
//! Every fact here is read from the code it describes; the module docs of
//! the places named in each comment are the source.

/// Exit codes: `main` (errors exit 2), `app::run`, `pinning::Report::exit_code`
/// and the TUI's signal handling (`ui::run`, 128 + the signal).
pub const EXIT_STATUS: &[(&str, &str)] = &[
    (
        "0",
        "Success: the TUI was quit (`q`, `Ctrl-C`); `-b`, `--record` or `--serve` \
         ended after `-n N`, after `--duration`, or on SIGINT or SIGTERM (SIGHUP too, \
         except as a service, where it starts a new recording part); `-b` or `--export` \
         stopped because the reader of its output went away; `--pinning-check` found \
         nothing at or above `--fail-on`; `--plan` printed its plan, or `--plan --apply` \
         kept it; `--revert` restored every file; `--help`, `--version`.",
    ),
    (
        "1",
        "`--pinning-check` found a problem at or above `--fail-on` (default `warning`); \
         `--plan --apply` made things worse and reverted it automatically.",
    ),
    (
        "2",
        "A usage error (an unknown flag, a bad value, flags that do not go together), \
         or nettop could not do its job: no privileges or BTF for BPF, an unreadable or \
         malformed input, no terminal for the TUI, the `--serve` socket failing, output \
         that could not be written; for `--pinning-check`, the check could not run; \
         for `--revert`, a revert file refused (not written on this host, changed since, \
         or from before the last boot) or a file that could not be restored. \
         Replay with `-b` and `--export` also exit 2 when they skipped corrupted \
         records, after printing the rest.",
    ),
    (
        "129",
        "The TUI ended on SIGHUP, or because its terminal went away (128 + the signal).",
    ),
    (
        "130",
        "The TUI ended on SIGINT (in the TUI `Ctrl-C` is a key and exits 0).",
    ),
    ("143", "The TUI ended on SIGTERM."),
];

/// Variables that change what nettop does, from every `env::var` read in
/// `src/` and in the crates it calls for it (sd-notify reads
/// `NOTIFY_SOCKET`). Left out: `NETTOP_REQUIRE_BPF`, which only the test
/// suite reads (it turns skipped privileged tests into failures), and the
/// units' `NETTOP_LISTEN`, `NETTOP_DELAY`, `NETTOP_RECORD_OPTS` and
/// `NETTOP_OPTS`, which systemd expands into the command line and nettop
/// never sees (FILES has them, under /etc/default/nettop).
pub const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "NO_COLOR",
        "Set and not empty: the TUI draws without colour whatever the scheme \
         (no-color.org); `Z` and `W` still change and save the scheme. No other \
         output uses colour.",
    ),
    (
        "XDG_CONFIG_HOME",
        "The configuration file is `$XDG_CONFIG_HOME/nettop/config.toml`; ignored \
         unless it is an absolute path.",
    ),
    (
        "HOME",
        "Without an absolute `XDG_CONFIG_HOME`, the configuration file is \
         `$HOME/.config/nettop/config.toml`; with neither, the TUI reads none and `W` \
         saves nothing.",
    ),
    (
        "NETTOP_CACHE_DIR",
        "Directory of the calibration cache when `--cache-dir` is not given (default \
         /var/cache/nettop); empty counts as unset. The systemd units set it.",
    ),
    (
        "NODE_NAME",
        "The Kubernetes node's name (the DaemonSet sets it from the downward API): shown \
         beside the hostname in the host line, `node_name` in JSON and `nettop_host_info`. \
         Ignored unless it is a DNS subdomain.",
    ),
    (
        "JOURNAL_STREAM",
        "Set by systemd: while stderr is that journal stream, log lines carry syslog \
         priorities (`<3>` to `<6>`) instead of the `nettop:` prefix.",
    ),
    (
        "NOTIFY_SOCKET",
        "Set by systemd for `Type=notify` units: `--record` and `--serve` report \
         ready once the first snapshot is recorded and served.",
    ),
    (
        "NETTOP_NO_TASK_SAMPLER",
        "For tests and debugging: set to anything, nettop lists tasks by walking \
         /proc instead of with the BPF task sampler (the health line says so).",
    ),
];

/// What nettop reads and writes: `app::config`, `calibrate::cache`,
/// `record::session`, and what the Debian package installs
/// (`[package.metadata.deb]` in Cargo.toml, packaging/systemd/,
/// packaging/default/).
pub const FILES: &[(&str, &str)] = &[
    (
        "$XDG_CONFIG_HOME/nettop/config.toml",
        "The TUI's settings: view, sort, columns, delay, threads, tree, forest, \
         command line and colour scheme. `W` writes it; the TUI (live and `--replay`) \
         reads it at start, and flags given on the command line win over it. \
         `--config FILE` names another file, `--no-config` uses none. Batch, record, \
         serve and lint modes never read it.",
    ),
    (
        "~/.config/nettop/config.toml",
        "The same file when `XDG_CONFIG_HOME` is unset or not an absolute path.",
    ),
    (
        "/var/cache/nettop/calibration.json",
        "The calibration cache: this host's hidden cost per interruption, valid for \
         one kernel, CPU model, hypervisor, boot and nettop build. `--cache-dir DIR` or \
         `NETTOP_CACHE_DIR` moves it; `--calibrate` measures again and replaces it, keeping the \
         costs of each other state of the host (its way of delivering IPIs) a calibration saw on \
         this boot.",
    ),
    (
        "/var/log/pods/",
        "The kubelet's pod log directories (`NAMESPACE_NAME_UID`), and with \
         `/var/log/containers/` its container links (`POD_NAMESPACE_CONTAINER-ID.log`): \
         listed, never read, to name a pod cgroup by namespace, pod and container. \
         Absent off Kubernetes nodes.",
    ),
    (
        "/etc/passwd",
        "User names for USER through NSS; in a container under the node's PID \
         namespace, the node's, under `/proc/1/root` (or mounted at `/etc/passwd`, as the \
         DaemonSet does).",
    ),
    (
        "FILE",
        "A recording written by `--record FILE` (zstd-compressed when the name ends in \
         `.zst`), mode 0600; with `--max-size` it rotates into `FILE.1` … `FILE.N` \
         (`--keep N`, default 4). `--replay FILE` reads it.",
    ),
    (
        "DIR/nettop-YYYYMMDD-HHMMSS.rec.zst",
        "Recording parts written by `--record DIR/`, named by their UTC start: a new \
         one each UTC day, at `--max-size` and on SIGHUP. `--keep N` and `--keep-for D` \
         delete old parts, those earlier runs left included.",
    ),
    (
        "/etc/default/nettop",
        "Settings of the two systemd units: `NETTOP_LISTEN` (the `--serve` address, \
         default 127.0.0.1:9867), `NETTOP_DELAY` (`-d`, default 10), \
         `NETTOP_RECORD_OPTS` (nettop-record.service's retention, default \
         `--keep 28 --keep-for 28d --max-size 1G`) and `NETTOP_OPTS` (further flags). \
         A dpkg conffile: edits survive upgrades; `systemctl restart` applies them.",
    ),
    (
        "/var/log/nettop/",
        "Where nettop-record.service records its daily parts.",
    ),
    (
        "/usr/lib/systemd/system/nettop-record.service",
        "Daily recordings in /var/log/nettop and metrics on 127.0.0.1:9867 from one \
         collector; `systemctl reload` starts a new part. Installed by the Debian \
         package, not enabled.",
    ),
    (
        "/usr/lib/systemd/system/nettop-serve.service",
        "Metrics only, on 127.0.0.1:9867. It conflicts with nettop-record.service.",
    ),
    (
        "/var/lib/nettop/",
        "`--plan --apply`'s (and the TUI's `P`'s) revert files (`revert-SECONDS-PID.json`, mode 0600: the \
         exact previous value of every file it wrote, with an HMAC-SHA256 over them) \
         and their key `revert.key` (32 random bytes, mode 0600, made on first use); \
         `--revert` refuses a file this key did not sign. `--state-dir DIR` moves them.",
    ),
    (
        "/usr/share/nettop/fleet/",
        "Prometheus recording rules and alerts (`nettop.rules.yml`) and a Grafana \
         dashboard (`nettop.json`) over the metrics.",
    ),
];

/// Command lines that run as written (`tests/pure/docs_readme.rs` parses each
/// one with the real command line), covering the interactive, batch,
/// evidence, lint and metrics uses. Plain words only: no quoting, no pipes.
pub const EXAMPLES: &[(&str, &str)] = &[
    (
        "nettop",
        "Every process's own CPU time and the interrupt work stolen from it, live \
         (as root, or with CAP_BPF and CAP_PERFMON).",
    ),
    (
        "nettop -p 1234 -H",
        "Only process 1234, one row per thread.",
    ),
    (
        "nettop --no-config",
        "The TUI with its default settings, whatever the configuration file says.",
    ),
    (
        "nettop -b -n 5 -d 2",
        "Five text frames two seconds apart, then exit, as `top -b -n 5 -d 2`.",
    ),
    (
        "nettop -b -n 1 --json",
        "One frame as a JSON object, for scripts.",
    ),
    (
        "nettop -b -n 3 --group cgroup",
        "Which pod, container or service loses CPU to interrupt work.",
    ),
    (
        "nettop --record busy.rec.zst --duration 10m",
        "Record ten minutes of raw samples, compressed, as evidence.",
    ),
    (
        "nettop --replay busy.rec.zst",
        "Browse the recording in the TUI (`[` `]` step, `T` goes to a time).",
    ),
    (
        "nettop --replay busy.rec.zst -b --begin 14:05 --end 14:10",
        "Five minutes of the recording (UTC) as batch text.",
    ),
    (
        "nettop --replay busy.rec.zst --export openmetrics",
        "The recording as OpenMetrics text on stdout, e.g. for \
         `promtool tsdb create-blocks-from openmetrics`.",
    ),
    (
        "nettop --pinning-check",
        "Lint CPU, IRQ and NUMA affinity; exit 1 on a warning or worse.",
    ),
    (
        "nettop --pinning-check --format json --fail-on error",
        "The same as JSON, exiting 1 only on errors.",
    ),
    (
        "nettop --plan",
        "One layout for the whole host (IRQs, RPS/XPS, RSS, flow rules, the kernel \
         command line), one line per change with the findings it resolves.",
    ),
    (
        "nettop --plan --format sh",
        "The same plan as a shell script to review and run by hand.",
    ),
    (
        "nettop --plan --apply --measure 10s",
        "Apply it after a revert file is written, measure 10 s before and after, and \
         revert automatically when it made things worse.",
    ),
    (
        "nettop --revert /var/lib/nettop/revert-1795643396-94928.json",
        "Restore exactly what that revert file holds.",
    ),
    (
        "nettop --serve",
        "OpenMetrics for Prometheus at http://127.0.0.1:9867/metrics.",
    ),
    (
        "nettop --record /var/log/nettop/ --serve 127.0.0.1:9867 -d 10",
        "Daily recordings and metrics from one collector, as nettop-record.service \
         runs it (the unit adds its retention flags).",
    ),
    (
        "nettop --calibrate",
        "Measure this host's hidden interrupt cost again and print the table.",
    ),
];
