//! The validation bootstrap's named pipe: Envoy opens it as its config file, so Envoy can be
//! started before the bootstrap exists and reads it as it is written.

use super::process::{RunError, Running};
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;
use std::time::Duration;

/// A named pipe at `path`, readable and writable by this user only.
pub(crate) fn make(path: &Path) -> io::Result<()> {
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path"))?;
    // SAFETY: `c_path` is a valid NUL-terminated string that outlives the call.
    if unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The pipe's writing end, once `reader` has opened the other: `None` when it exited first. A
/// blocking open would wait forever for a process that never opens it, so the open does not
/// block and is retried while the process runs (up to its deadline). The end returned blocks
/// on writes, and a write after the reader exited fails with `BrokenPipe`.
pub(crate) fn open_writer(path: &Path, reader: &mut Running) -> Result<Option<File>, RunError> {
    loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
        {
            Ok(file) => {
                blocking(&file).map_err(RunError::Io)?;
                return Ok(Some(file));
            }
            // No reader yet.
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                if reader.exited()? {
                    return Ok(None);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(RunError::Io(e)),
        }
    }
}

/// Clears `O_NONBLOCK`: writes wait for the reader instead of failing when the pipe is full.
fn blocking(file: &File) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: `fd` is an open descriptor owned by `file` for the duration of both calls.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::process::start;
    use super::*;
    use std::io::Write;

    #[test]
    fn a_reader_gets_every_byte_written_and_then_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p");
        make(&path).unwrap();
        let mut cmd = std::process::Command::new("cat");
        cmd.arg(&path);
        let mut reader = start(cmd, dir.path(), Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("cat starts"));
        let mut file = open_writer(&path, &mut reader)
            .unwrap_or_else(|_| panic!("cat opens the pipe"))
            .expect("cat is still running");
        // More than a pipe's buffer, so the writes block on the reader.
        let body: Vec<u8> = (0..1_000_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        file.write_all(&body).unwrap();
        drop(file);
        let done = reader.wait().unwrap_or_else(|_| panic!("cat exits"));
        assert!(done.success);
        assert_eq!(done.stdout.as_bytes(), &body[..]);
    }

    #[test]
    fn a_reader_that_exits_without_opening_the_pipe_gives_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p");
        make(&path).unwrap();
        let mut reader = start(
            std::process::Command::new("true"),
            dir.path(),
            Duration::from_secs(30),
        )
        .unwrap_or_else(|_| panic!("true starts"));
        assert!(open_writer(&path, &mut reader)
            .unwrap_or_else(|_| panic!("no error"))
            .is_none());
    }
}
