//! The sample schema's strings come from other users and drivers (task
//! names, command lines, device names, cgroup paths): cleaned where a
//! sample or host facts enter nettop, before any front end or recording
//! sees them.

use super::{HostInfo, RawSample};
use crate::sys::sanitize::{REPLACEMENT, Untrusted, clean_string, is_unsafe, sanitize_via_json};

impl Untrusted for HostInfo {
    fn sanitize(&mut self) {
        clean_string(&mut self.hostname);
        clean_string(&mut self.node_name);
        clean_string(&mut self.kernel);
        clean_string(&mut self.boot_id);
        clean_string(&mut self.regime_source);
        clean_string(&mut self.calibration_missing);
        // Read from a cache file or a recording; nested and rare.
        if let Some(c) = &mut self.calibration {
            sanitize_via_json(c);
        }
    }
}

/// Field by field: this runs on every live sample, for thousands of tasks.
/// `every_string_field_is_cleaned` (tests/pure/sanitize.rs) fails when a string field is added to
/// the raw sample without being listed here.
impl Untrusted for RawSample {
    fn sanitize(&mut self) {
        for t in self.tasks.iter_mut().chain(self.procs.iter_mut()) {
            clean_string(&mut t.comm);
            clean_string(&mut t.affinity);
            // Arguments are anyone's bytes (`exec -a`, setproctitle).
            for a in &mut t.cmdline {
                clean_string(a);
            }
            if is_unsafe(t.state) {
                t.state = REPLACEMENT;
            }
        }
        for n in &mut self.notes {
            clean_string(n);
        }
        if let Some(g) = &mut self.devices_incomplete {
            clean_string(&mut g.why);
        }
        // Delegated cgroups are named by their (unprivileged) owners.
        for c in &mut self.cgroups {
            clean_string(&mut c.path);
            clean_string(&mut c.cpus);
            if let Some(p) = &mut c.pod {
                clean_string(&mut p.namespace);
                clean_string(&mut p.name);
                clean_string(&mut p.container);
            }
        }
        for n in &mut self.napi {
            clean_string(&mut n.dev);
        }
        for d in &mut self.devices {
            clean_string(&mut d.name);
            clean_string(&mut d.netns);
        }
        if let Some(h) = &mut self.health {
            for p in &mut h.programs {
                clean_string(&mut p.name);
            }
            for m in &mut h.missing_tracepoints {
                clean_string(m);
            }
            clean_string(&mut h.attach_mode);
            clean_string(&mut h.task_source);
        }
    }
}
