//! The Debian package (issues 13 and 23): scripts/package.sh builds it from
//! a release build; it installs into a scratch root with dpkg, systemd
//! accepts its units, its man page renders, its completions load, and the
//! installed binary is small because its debug info went to the dbgsym
//! package. Its maintainer scripts (cargo-deb's, from the units) reload
//! systemd, restart on upgrade only what runs, stop on remove and enable
//! nothing on install; its settings file is a conffile that survives an
//! upgrade and goes with a purge.
//!
//! The package test is slow (a release build), so it is one test; it needs
//! cargo-deb (scripts/deps.sh installs it). The quick tests check what the
//! package is made of: the units, their settings file, the cargo-deb
//! metadata and packaging/README.md.

use crate::common;
use crate::common::tier::Need;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use clap::Parser;
use nettop::app::cli::Cli;

const T: &str = "deb_builds_installs_upgrades_and_purges";
/// Issue 13's bound on the installed binary.
const MAX_BINARY: u64 = 15 << 20;
const UNITS: [&str; 2] = ["nettop-record.service", "nettop-serve.service"];
const DEFAULT_FILE: &str = "packaging/default/nettop";
const ENV_FILE_LINE: &str = "EnvironmentFile=-/etc/default/nettop";

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn run(cmd: &mut Command, what: &str) -> String {
    let out = common::run::output_within(cmd, Duration::from_secs(1800), what);
    assert!(
        out.status.success(),
        "{what}: {:?}\n{}{}",
        out.status,
        common::run::stdout(&out),
        common::run::stderr(&out)
    );
    common::run::stdout(&out)
}

/// `KEY=VALUE` lines of an environment file, as far as systemd's syntax is
/// used there: comments, blank lines, values in double quotes.
fn env_file(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l
                .split_once('=')
                .unwrap_or_else(|| panic!("not KEY=VALUE: {l}"));
            (k.to_string(), v.trim_matches('"').to_string())
        })
        .collect()
}

/// A unit's `Environment=` assignments: words split at blanks, a word in
/// double quotes kept whole, as systemd reads them.
fn unit_env(unit: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for l in unit.lines().filter_map(|l| l.strip_prefix("Environment=")) {
        let mut words = Vec::new();
        let mut rest = l.trim();
        while !rest.is_empty() {
            let (word, tail) = match rest.strip_prefix('"') {
                Some(q) => q.split_once('"').expect("closing quote"),
                None => rest.split_once(' ').unwrap_or((rest, "")),
            };
            words.push(word);
            rest = tail.trim_start();
        }
        for w in words {
            let (k, v) = w.split_once('=').expect("KEY=VALUE");
            out.insert(k.to_string(), v.to_string());
        }
    }
    out
}

/// `ExecStart=` with its variables expanded as systemd does: `${VAR}` is
/// one word, `$VAR` is split at blanks (no word at all when empty).
fn exec_start(unit: &str, env: &BTreeMap<String, String>) -> Vec<String> {
    let line = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("ExecStart=");
    let mut out = Vec::new();
    for w in line.split_whitespace() {
        if let Some(var) = w.strip_prefix("${").and_then(|v| v.strip_suffix('}')) {
            out.push(
                env.get(var)
                    .unwrap_or_else(|| panic!("${{{var}}} unset"))
                    .clone(),
            );
        } else if let Some(var) = w.strip_prefix('$') {
            let v = env.get(var).unwrap_or_else(|| panic!("${var} unset"));
            out.extend(v.split_whitespace().map(str::to_string));
        } else {
            out.push(w.to_string());
        }
    }
    out
}

/// The variables `ExecStart=` reads.
fn exec_vars(unit: &str) -> Vec<String> {
    let line = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("ExecStart=");
    line.split_whitespace()
        .filter_map(|w| w.strip_prefix('$'))
        .map(|v| v.trim_start_matches('{').trim_end_matches('}').to_string())
        .collect()
}

fn parses(argv: &[String], what: &str) {
    assert_eq!(argv[0], "/usr/bin/nettop", "{what}");
    let mut words = argv.to_vec();
    words[0] = "nettop".into();
    let cli = Cli::try_parse_from(&words).unwrap_or_else(|e| panic!("{what}: {words:?}\n{e}"));
    if let Err(e) = cli.check() {
        panic!("{what}: {words:?}: {e}");
    }
}

/// The settings file and the units hold the same defaults (the units must
/// run without the file, and the file documents what they run), every
/// setting is used, and what the units run with either is a command line
/// nettop accepts.
#[test]
fn units_and_their_settings_file_agree() {
    let text = read(&repo(DEFAULT_FILE));
    let file = env_file(&text);
    let example = text
        .lines()
        .find_map(|l| l.strip_prefix("# NETTOP_OPTS=\""))
        .and_then(|l| l.split('"').next())
        .expect("an example NETTOP_OPTS in a comment")
        .to_string();
    let mut used = Vec::new();
    for u in UNITS {
        let text = read(&repo("packaging/systemd").join(u));
        assert!(
            text.lines().any(|l| l == ENV_FILE_LINE),
            "{u}: no {ENV_FILE_LINE}"
        );
        let own = unit_env(&text);
        for v in exec_vars(&text) {
            assert!(own.contains_key(&v), "{u}: ${v} has no default in the unit");
            assert!(file.contains_key(&v), "{u}: ${v} is not in {DEFAULT_FILE}");
            used.push(v);
        }
        for (k, v) in &own {
            if let Some(f) = file.get(k) {
                assert_eq!(f, v, "{u}: {k} defaults differ from {DEFAULT_FILE}");
            }
        }
        parses(
            &exec_start(&text, &own),
            &format!("{u} without {DEFAULT_FILE}"),
        );
        let mut with_file = own.clone();
        with_file.extend(file.clone());
        parses(
            &exec_start(&text, &with_file),
            &format!("{u} with {DEFAULT_FILE}"),
        );
        // The file's own example of extra flags: accepted by both units,
        // and passed as separate arguments.
        with_file.insert("NETTOP_OPTS".into(), example.clone());
        let argv = exec_start(&text, &with_file);
        parses(&argv, &format!("{u} with NETTOP_OPTS={example}"));
        let words: Vec<String> = example.split_whitespace().map(str::to_string).collect();
        assert!(argv.ends_with(&words), "{argv:?}");
    }
    for k in file.keys() {
        assert!(used.contains(k), "{DEFAULT_FILE}: {k} is used by no unit");
    }
}

/// cargo-deb's metadata: a real maintainer, the units handed to its
/// systemd support (so it writes the maintainer scripts) and not enabled,
/// as packaging/README.md says, the settings file installed under /etc
/// (so it is a conffile), every source file present.
#[test]
fn cargo_deb_metadata_matches_the_package_readme() {
    let manifest: toml::Value = toml::from_str(&read(&repo("Cargo.toml"))).unwrap();
    let deb = &manifest["package"]["metadata"]["deb"];
    let maintainer = deb["maintainer"].as_str().unwrap();
    let (name, addr) = maintainer
        .strip_suffix('>')
        .and_then(|m| m.split_once(" <"))
        .unwrap_or_else(|| panic!("maintainer {maintainer:?} is not `Name <address>`"));
    let domain = addr.split_once('@').map(|(_, d)| d).unwrap_or_default();
    assert!(
        !name.trim().is_empty() && domain.contains('.'),
        "{maintainer}"
    );
    for fake in ["localhost", "example.", "invalid"] {
        assert!(!domain.contains(fake), "{maintainer}: not a real address");
    }

    assert_eq!(
        deb["maintainer-scripts"].as_str(),
        Some("packaging/systemd/")
    );
    let units = deb["systemd-units"].as_array().expect("systemd-units");
    let mut named: Vec<String> = Vec::new();
    for u in units {
        let n = u["unit-name"].as_str().expect("unit-name");
        assert_eq!(
            u.get("enable").and_then(|v| v.as_bool()),
            Some(false),
            "{n}: enable"
        );
        assert_eq!(
            u.get("start").and_then(|v| v.as_bool()),
            Some(false),
            "{n}: start"
        );
        named.push(format!("{n}.service"));
    }
    named.sort();
    assert_eq!(named, UNITS, "systemd-units");
    let readme = read(&repo("packaging/README.md")).replace("**", "");
    let readme = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        readme.contains("not enabled on install"),
        "packaging/README.md does not say the units are not enabled on install"
    );

    let assets = deb["assets"].as_array().unwrap();
    let mut conffile = false;
    for a in assets {
        let (src, dest) = (a[0].as_str().unwrap(), a[1].as_str().unwrap());
        // cargo-deb installs the units itself: listed here too, they
        // would be packaged twice.
        assert!(
            !dest.contains("systemd/system"),
            "{src}: a unit among the assets"
        );
        if !src.starts_with("target/") {
            assert!(repo(src).is_file(), "asset {src} missing");
        }
        conffile |= src == DEFAULT_FILE && dest == "etc/default/";
    }
    assert!(
        conffile,
        "{DEFAULT_FILE} is not installed as /etc/default/nettop"
    );
}

/// packaging/README.md names the libbpf version the binary links, as
/// `nettop --version` prints it.
#[test]
fn package_readme_names_the_libbpf_the_binary_prints() {
    let out = common::run::output_within(
        common::run::nettop().arg("--version"),
        Duration::from_secs(60),
        "nettop --version",
    );
    let version = common::run::stdout(&out);
    let libbpf = version
        .lines()
        .find_map(|l| l.strip_prefix("libbpf:"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no libbpf line in {version}"));
    let readme = read(&repo("packaging/README.md"));
    let named: Vec<&str> = readme
        .split("libbpf ")
        .skip(1)
        .filter_map(|s| s.split_whitespace().next())
        .filter(|w| w.starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    assert!(
        !named.is_empty(),
        "packaging/README.md names no libbpf version"
    );
    for n in named {
        assert_eq!(
            n, libbpf,
            "packaging/README.md says libbpf {n}, the binary {libbpf}"
        );
    }
}

/// A stub for systemctl, deb-systemd-helper and deb-systemd-invoke: logs
/// its name and arguments; `debian-installed` and `was-enabled` answer
/// what `STUB_ENABLED` says (an admin who enabled the unit, or not).
const STUB: &str = r#"#!/bin/sh
echo "$(basename "$0") $*" >> "$STUB_LOG"
[ "$1" = --quiet ] && shift
case "$1" in debian-installed|was-enabled) [ "$STUB_ENABLED" = 1 ]; exit $? ;; esac
exit 0
"#;

/// Runs a maintainer script from the package as dpkg would on a host
/// booted with systemd, the tools it calls replaced by [`STUB`]; returns
/// what they were asked to do. Only the paths the script tests
/// (/run/systemd/system, /usr/bin/deb-systemd-helper) are pointed at the
/// stubs' directory: the logic is the package's own.
fn simulate(control: &Path, script: &str, args: &[&str], enabled: bool) -> String {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    let booted = dir.path().join("run-systemd-system");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&booted).unwrap();
    for tool in ["systemctl", "deb-systemd-helper", "deb-systemd-invoke"] {
        let p = bin.join(tool);
        std::fs::write(&p, STUB).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let text = read(&control.join(script));
    assert!(
        text.contains("/run/systemd/system"),
        "{script}: no systemd check"
    );
    let text = text
        .replace("/run/systemd/system", &booted.display().to_string())
        .replace(
            "/usr/bin/deb-systemd-helper",
            &bin.join("deb-systemd-helper").display().to_string(),
        );
    let copy = dir.path().join(script);
    std::fs::write(&copy, text).unwrap();
    let log = dir.path().join("log");
    std::fs::write(&log, "").unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    run(
        Command::new("sh")
            .arg(&copy)
            .args(args)
            .env("PATH", path)
            .env("STUB_LOG", &log)
            .env("STUB_ENABLED", if enabled { "1" } else { "0" }),
        &format!("{script} {args:?}"),
    );
    read(&log)
}

fn logged(log: &str, prefix: &str, unit: &str) -> bool {
    log.lines()
        .any(|l| l.starts_with(prefix) && l.split_whitespace().any(|w| w == unit))
}

/// The maintainer scripts cargo-deb wrote: what they ask of systemd on
/// install, upgrade, remove and purge.
fn check_maintainer_scripts(control: &Path) {
    for s in ["postinst", "prerm", "postrm"] {
        let mode = std::fs::metadata(control.join(s))
            .unwrap_or_else(|e| panic!("no {s}: {e}"))
            .permissions()
            .mode();
        assert!(mode & 0o111 != 0, "{s} is not executable");
    }
    let reload = "systemctl --system daemon-reload";
    // First install: systemd reloads; nothing is enabled or started.
    let log = simulate(control, "postinst", &["configure"], false);
    assert!(log.contains(reload), "install:\n{log}");
    assert!(
        !log.contains("deb-systemd-invoke"),
        "install starts a unit:\n{log}"
    );
    assert!(
        !log.contains("deb-systemd-helper enable"),
        "install enables:\n{log}"
    );
    for u in UNITS {
        assert!(
            logged(&log, "deb-systemd-helper update-state", u),
            "install:\n{log}"
        );
    }
    // Upgrade: what runs is restarted (try-restart starts nothing).
    let log = simulate(control, "postinst", &["configure", "0.1.0-1"], false);
    assert!(log.contains(reload), "upgrade:\n{log}");
    for u in UNITS {
        assert!(
            logged(&log, "deb-systemd-invoke try-restart", u),
            "upgrade:\n{log}"
        );
    }
    assert!(
        !log.contains("deb-systemd-helper enable"),
        "upgrade enables:\n{log}"
    );
    // …and what the admin enabled stays enabled.
    let log = simulate(control, "postinst", &["configure", "0.1.0-1"], true);
    for u in UNITS {
        assert!(
            logged(&log, "deb-systemd-helper enable", u),
            "re-enable:\n{log}"
        );
    }
    // prerm stops the units on remove, not on upgrade.
    let log = simulate(control, "prerm", &["upgrade", "0.1.0-1"], false);
    assert!(!log.contains("stop"), "prerm upgrade stops:\n{log}");
    let log = simulate(control, "prerm", &["remove"], false);
    for u in UNITS {
        assert!(
            logged(&log, "deb-systemd-invoke stop", u),
            "prerm remove:\n{log}"
        );
    }
    // postrm: masked on remove, forgotten on purge, systemd reloaded.
    let log = simulate(control, "postrm", &["remove"], false);
    assert!(log.contains(reload), "postrm remove:\n{log}");
    for u in UNITS {
        assert!(
            logged(&log, "deb-systemd-helper mask", u),
            "postrm remove:\n{log}"
        );
    }
    let log = simulate(control, "postrm", &["purge"], false);
    for u in UNITS {
        assert!(
            logged(&log, "deb-systemd-helper purge", u),
            "postrm purge:\n{log}"
        );
    }
}

/// dpkg on a scratch root, running the package's maintainer scripts
/// outside a chroot (`DPKG_ROOT` tells deb-systemd-helper where the root
/// is). Dependencies (libc6, libhwloc15 …) are taken as given.
fn dpkg(root: &Path, args: &[&str], what: &str) -> String {
    run(
        Command::new("dpkg")
            .arg(format!("--root={}", root.display()))
            .args([
                "--force-not-root",
                "--force-depends",
                "--force-script-chrootless",
            ])
            .args(args),
        what,
    )
}

fn package_status(root: &Path) -> String {
    let status = read(&root.join("var/lib/dpkg/status"));
    status
        .split("\n\n")
        .find(|p| p.starts_with("Package: nettop\n"))
        .unwrap_or_default()
        .to_string()
}

case!(
    deb_builds_installs_upgrades_and_purges,
    [
        Need::Root,
        Need::Tool("cargo-deb", "--version"),
        Need::Tool("dpkg", "--version")
    ]
);
fn deb_builds_installs_upgrades_and_purges() {
    for (bin, arg) in [
        ("cargo-deb", "--version"),
        ("dpkg", "--version"),
        ("systemd-analyze", "--version"),
        ("man", "--version"),
        ("deb-systemd-helper", "--help"),
    ] {
        if !common::tool_runs(bin, arg) {
            common::skip(T, &format!("{bin} is not installed (scripts/deps.sh)"));
            return;
        }
    }
    let root = repo("");
    let t0 = Instant::now();
    // package.sh builds in Cargo's target directory (CARGO_TARGET_DIR if
    // set, as cargo-deb looks there too) and prints the .deb's path.
    let built = run(
        Command::new(root.join("scripts/package.sh")).current_dir(&root),
        "scripts/package.sh",
    );
    let build_time = t0.elapsed();
    let deb = PathBuf::from(built.lines().last().unwrap_or_default().trim());
    assert!(deb.is_file(), "package.sh printed {built:?}");

    // The control fields and the maintainer scripts.
    let manifest: toml::Value = toml::from_str(&read(&root.join("Cargo.toml"))).unwrap();
    let maintainer = run(
        Command::new("dpkg-deb")
            .arg("-f")
            .arg(&deb)
            .arg("Maintainer"),
        "dpkg-deb -f",
    );
    assert_eq!(
        maintainer.trim(),
        manifest["package"]["metadata"]["deb"]["maintainer"]
            .as_str()
            .unwrap()
    );
    let control = tempfile::tempdir().unwrap();
    run(
        Command::new("dpkg-deb")
            .arg("-e")
            .arg(&deb)
            .arg(control.path()),
        "dpkg-deb -e",
    );
    let conffiles = read(&control.path().join("conffiles"));
    assert_eq!(conffiles.trim(), "/etc/default/nettop");
    check_maintainer_scripts(control.path());

    // Install into a scratch root. policy-rc.d refuses every service
    // action there, so on a host booted with systemd the scripts' restarts
    // and stops never reach the host's own units.
    let scratch = tempfile::tempdir().unwrap();
    let r = scratch.path();
    for d in ["var/lib/dpkg/info", "var/lib/dpkg/updates", "usr/sbin"] {
        std::fs::create_dir_all(r.join(d)).unwrap();
    }
    std::fs::write(r.join("var/lib/dpkg/status"), "").unwrap();
    let policy = r.join("usr/sbin/policy-rc.d");
    std::fs::write(&policy, "#!/bin/sh\nexit 101\n").unwrap();
    std::fs::set_permissions(&policy, std::fs::Permissions::from_mode(0o755)).unwrap();
    dpkg(r, &["-i", deb.to_str().unwrap()], "dpkg -i");
    let status = package_status(r);
    assert!(status.contains("Status: install ok installed"), "{status}");
    assert!(
        status.contains("Conffiles:\n /etc/default/nettop "),
        "{status}"
    );
    let settings = r.join("etc/default/nettop");
    assert_eq!(read(&settings), read(&root.join(DEFAULT_FILE)));
    let unit_dir = r.join("usr/lib/systemd/system");
    for u in UNITS {
        assert!(unit_dir.join(u).is_file(), "{u} not installed");
        // deb-systemd-helper knows the unit (and will clean up after it),
        // but nothing enabled it.
        let state = r.join("var/lib/systemd/deb-systemd-helper-enabled");
        assert!(
            state.join(format!("{u}.dsh-also")).is_file(),
            "no state for {u}"
        );
        let wants = r.join("etc/systemd/system/multi-user.target.wants").join(u);
        assert!(wants.symlink_metadata().is_err(), "{u} enabled on install");
    }
    for f in [
        "usr/share/doc/nettop/runbooks.md",
        "usr/share/nettop/fleet/nettop.rules.yml",
        "usr/share/nettop/fleet/nettop.json",
    ] {
        assert!(r.join(f).is_file(), "{f} not installed");
    }

    // The binary: small, runs, says what it is.
    let bin = r.join("usr/bin/nettop");
    let size = std::fs::metadata(&bin).unwrap().len();
    assert!(size <= MAX_BINARY, "installed binary is {size} bytes");
    // Test hooks (the BPF fake clock, test runs of programs) are built
    // with the `testing` feature only, never into what ships.
    let image = std::fs::read(&bin).unwrap();
    for hook in [&b"fake_now_ns"[..], b"test_clock", b"run_tracepoint"] {
        assert!(
            !image.windows(hook.len()).any(|w| w == hook),
            "the shipped binary carries the test hook {}",
            String::from_utf8_lossy(hook)
        );
    }
    let version = run(Command::new(&bin).arg("--version"), "nettop --version");
    for want in [
        "nettop 0.1.0",
        "commit:",
        "libbpf:",
        "hwloc:",
        "BPF attach:",
    ] {
        assert!(version.contains(want), "{want} missing from {version}");
    }
    // Built from this checkout: the commit is known.
    if root.join(".git").exists() {
        assert!(!version.contains("commit:      unknown"), "{version}");
    }
    // Its debug info is in the dbgsym package, under its build id.
    let ddeb = deb.parent().unwrap().join(
        deb.file_name()
            .unwrap()
            .to_string_lossy()
            .replace("nettop_", "nettop-dbgsym_")
            .replace(".deb", ".ddeb"),
    );
    let listing = run(Command::new("dpkg-deb").arg("-c").arg(&ddeb), "dpkg-deb -c");
    let notes = run(Command::new("readelf").arg("-n").arg(&bin), "readelf -n");
    let id = notes
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .expect("binary has a build id")
        .to_string();
    let debug_file = format!("usr/lib/debug/.build-id/{}/{}.debug", &id[..2], &id[2..]);
    assert!(
        listing.contains(&debug_file),
        "{debug_file} not in\n{listing}"
    );

    // The man page renders and documents the service flags.
    let man = r.join("usr/share/man/man1/nettop.1.gz");
    let page = run(
        Command::new("man")
            .arg("-l")
            .arg(&man)
            .env("MANWIDTH", "100"),
        "man -l",
    );
    for want in ["NAME", "nettop", "--record", "--keep-for", "--serve"] {
        assert!(page.contains(want), "{want} missing from the man page");
    }

    // Completions: bash loads them and completes nettop's flags.
    let bash = r.join("usr/share/bash-completion/completions/nettop");
    let comp = run(
        Command::new("bash").arg("-c").arg(format!(
            "source {}; COMP_WORDS=(nettop --kee); COMP_CWORD=1; _nettop nettop --kee nettop; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            bash.display()
        )),
        "bash completion",
    );
    assert!(comp.lines().any(|l| l == "--keep-for"), "{comp}");
    for f in [
        "usr/share/zsh/vendor-completions/_nettop",
        "usr/share/fish/vendor_completions.d/nettop.fish",
    ] {
        assert!(r.join(f).is_file(), "{f} not installed");
    }

    // systemd accepts both units as installed: ExecStart pointed at the
    // scratch root's binary (verify checks it is executable), the man page
    // of Documentation= looked up there too. Warnings count as failures.
    let units = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for u in UNITS {
        let text = read(&unit_dir.join(u));
        assert!(text.contains("ExecStart=/usr/bin/nettop "), "{u}");
        let p = units.path().join(u);
        std::fs::write(
            &p,
            text.replace("/usr/bin/nettop", &bin.display().to_string()),
        )
        .unwrap();
        paths.push(p);
    }
    let out = common::run::output_within(
        Command::new("systemd-analyze")
            .arg("verify")
            .args(&paths)
            .env("MANPATH", r.join("usr/share/man")),
        Duration::from_secs(120),
        "systemd-analyze verify",
    );
    let err = common::run::stderr(&out);
    assert!(out.status.success() && err.trim().is_empty(), "{err}");

    // Upgrade over itself: the admin's settings stay as they are.
    let edited = format!("{}NETTOP_OPTS=\"--top-cgroups 7\"\n", read(&settings));
    std::fs::write(&settings, &edited).unwrap();
    dpkg(r, &["-i", deb.to_str().unwrap()], "dpkg -i (upgrade)");
    assert!(package_status(r).contains("Status: install ok installed"));
    assert_eq!(
        read(&settings),
        edited,
        "upgrade replaced the edited conffile"
    );
    for leftover in [
        "etc/default/nettop.dpkg-dist",
        "etc/default/nettop.dpkg-new",
    ] {
        assert!(!r.join(leftover).exists(), "{leftover}");
    }

    // Remove keeps the settings; purge takes them and the units' state.
    dpkg(r, &["--remove", "nettop"], "dpkg --remove");
    assert!(!bin.exists());
    assert!(!unit_dir.join(UNITS[0]).exists(), "unit left after remove");
    assert_eq!(read(&settings), edited, "remove took the conffile");
    assert!(package_status(r).contains("Status: deinstall ok config-files"));
    dpkg(r, &["--purge", "nettop"], "dpkg --purge");
    assert!(!settings.exists(), "purge left /etc/default/nettop");
    assert!(package_status(r).is_empty(), "{}", package_status(r));
    let state = r.join("var/lib/systemd/deb-systemd-helper-enabled");
    for u in UNITS {
        assert!(!unit_dir.join(u).exists(), "{u} left after purge");
        assert!(
            !state.join(format!("{u}.dsh-also")).exists(),
            "{u}: state left"
        );
    }
    common::report(&format!(
        "{T}: package built in {build_time:.0?}, installed binary {size} bytes \
         ({:.1} MiB), {}\n",
        size as f64 / (1 << 20) as f64,
        deb.display()
    ));
}

case!(
    install_sh_installs_the_man_page_and_completions,
    [Need::Root]
);
/// The quick start's `scripts/install.sh` installs the man page and the
/// shell completions beside the binary, so `man nettop` works after it:
/// here into a scratch PREFIX with the test build (no release build).
fn install_sh_installs_the_man_page_and_completions() {
    if !common::is_root() {
        return common::skip("install_sh_installs_the_man_page", "not root (apt-get)");
    }
    let prefix = tempfile::tempdir().unwrap();
    run(
        Command::new(repo("scripts/install.sh"))
            .env("PREFIX", prefix.path())
            .env("NETTOP_BIN", env!("CARGO_BIN_EXE_nettop")),
        "scripts/install.sh",
    );
    let p = prefix.path();
    for f in [
        "bin/nettop",
        "share/man/man1/nettop.1",
        "share/bash-completion/completions/nettop",
        "share/zsh/site-functions/_nettop",
        "share/fish/vendor_completions.d/nettop.fish",
    ] {
        assert!(p.join(f).is_file(), "{f} not installed");
    }
    // man finds it by name in the PREFIX's man tree, and renders it.
    let found = run(
        Command::new("man")
            .args(["-w", "nettop"])
            .env("MANPATH", p.join("share/man")),
        "man -w nettop",
    );
    assert_eq!(
        found.trim(),
        p.join("share/man/man1/nettop.1").display().to_string()
    );
    let page = run(
        Command::new("man")
            .args(["-P", "cat", "nettop"])
            .env("MANPATH", p.join("share/man"))
            .env("MANWIDTH", "80"),
        "man nettop",
    );
    assert!(page.contains("EXIT STATUS"), "{page}");
}
