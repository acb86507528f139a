import Foundation

/// Writes to standard output with write(2). SIGPIPE is ignored (see `BLEGatewayCommand.main`), so a reader that
/// has gone — `blegateway scan --json | head` — shows up as EPIPE: the command then exits quietly, as a Unix
/// tool does, instead of trapping in Foundation's `FileHandle.write`.
enum StandardOutput {
    static func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Foundation.write(STDOUT_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
                if n > 0 {
                    offset += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    exit(errno == EPIPE ? 0 : 1)
                }
            }
        }
    }

    static func write(_ text: String) { write(Array(text.utf8)) }

    /// Whether a person or another program reads stdout as it comes (a terminal, a pipe, a socket), rather than a
    /// file or /dev/null.
    static var isPipeOrTerminal: Bool {
        var st = stat()
        guard fstat(STDOUT_FILENO, &st) == 0 else { return false }
        let kind = st.st_mode & S_IFMT
        return kind == S_IFIFO || kind == S_IFSOCK || isatty(STDOUT_FILENO) == 1
    }

    /// The terminal's rows and columns (TIOCGWINSZ), or 40 × 120 when it cannot be asked.
    static func terminalSize() -> (rows: Int, columns: Int) {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 0 else { return (40, 120) }
        return (Int(size.ws_row), Int(max(size.ws_col, 40)))
    }
}
