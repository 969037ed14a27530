//! `strata-sandbox [--write DIR]… [--hide DIR]… [--net] -- PROGRAM ARGS…`: runs PROGRAM under
//! the Landlock ruleset (see `strata_permissions::sandbox`).

fn main() -> std::process::ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let message = strata_permissions::sandbox::helper_main(&args);
    eprintln!("{message}");
    std::process::ExitCode::from(126)
}
