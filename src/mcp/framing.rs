//! stdio framing: one JSON-RPC message per line, with a bound on the length of a line.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The longest line accepted; a longer one is discarded as it streams by,
/// never held in memory.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    Line(Vec<u8>),
    /// A line longer than the limit; its bytes were dropped.
    TooLong,
    Eof,
}

/// Reads the next line (without its `\n` or `\r\n`) from `input`.
pub async fn read_frame<R: AsyncBufRead + Unpin>(
    input: &mut R,
    max: usize,
) -> std::io::Result<Frame> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buf = input.fill_buf().await?;
        if buf.is_empty() {
            // EOF: a last line without a newline still counts.
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => Frame::TooLong,
                (false, true) => Frame::Eof,
                (false, false) => Frame::Line(trim_cr(line)),
            });
        }
        let (chunk, found) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i)),
            None => (buf, None),
        };
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = found.map_or(buf.len(), |i| i + 1);
        input.consume(used);
        if found.is_some() {
            return Ok(if too_long {
                Frame::TooLong
            } else {
                Frame::Line(trim_cr(line))
            });
        }
    }
}

fn trim_cr(mut line: Vec<u8>) -> Vec<u8> {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<Frame> {
        let mut reader = tokio::io::BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        loop {
            let frame = read_frame(&mut reader, max).await.unwrap();
            let eof = frame == Frame::Eof;
            out.push(frame);
            if eof {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn splits_lines_and_bounds_them() {
        use Frame::*;
        let line = |s: &str| Line(s.as_bytes().to_vec());
        let cases: &[(&[u8], usize, Vec<Frame>)] = &[
            (b"a\nbc\n", 10, vec![line("a"), line("bc"), Eof]),
            (b"a\r\nlast", 10, vec![line("a"), line("last"), Eof]),
            (b"0123456789ab\nok\n", 10, vec![TooLong, line("ok"), Eof]),
            (b"0123456789\n", 10, vec![line("0123456789"), Eof]),
            (b"01234567890", 10, vec![TooLong, Eof]),
            (b"\n\n", 10, vec![line(""), line(""), Eof]),
        ];
        for (input, max, expected) in cases {
            assert_eq!(
                &frames(input, *max).await,
                expected,
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
    }
}
