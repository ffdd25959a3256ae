use std::process::ExitCode;

use nettop::app::cli::Cli;

fn main() -> ExitCode {
    ensure_std_fds();
    nettop::app::logger::install();
    let cli = Cli::parse_checked();
    match nettop::app::run(&cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            log::error!("{e:#}");
            ExitCode::from(2)
        }
    }
}

/// Started with stdin, stdout or stderr closed (`nettop >&-`), the first
/// file nettop opens would get that descriptor, and the report or an error
/// message would be written into a recording or a /proc file. Closed
/// standard descriptors are pointed at /dev/null instead.
fn ensure_std_fds() {
    for fd in 0..3 {
        // SAFETY: F_GETFD only queries whether `fd` is open.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1 {
            continue;
        }
        // SAFETY: a constant NUL-terminated path; open returns the lowest
        // free descriptor, which is `fd` since every lower one is open.
        let got = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
        if got >= 0 && got != fd {
            // SAFETY: `got` was just opened by us; it is not the descriptor
            // we wanted, so it is closed again.
            unsafe { libc::close(got) };
        }
    }
}
