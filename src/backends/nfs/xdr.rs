//! XDR (RFC 4506): big-endian 4-byte units, opaque data padded to a multiple of 4.
//!
//! The encoder appends to a caller's `Vec<u8>` (the connection's send buffer,
//! so a call is built in place); the decoder reads a borrowed slice and fails
//! with [`Short`] when the slice ends early, which the receive path uses to
//! tell "need more bytes" from a complete header.

use std::fmt;

/// Padding needed after `len` bytes of opaque data.
pub fn pad(len: usize) -> usize {
    (4 - (len & 3)) & 3
}

/// Appends XDR items to a byte vector.
pub struct Enc<'a> {
    /// The bytes written so far (the caller's buffer).
    pub buf: &'a mut Vec<u8>,
}

impl<'a> Enc<'a> {
    /// An encoder appending to `buf`.
    pub fn new(buf: &'a mut Vec<u8>) -> Self {
        Enc { buf }
    }

    /// An unsigned int.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// An unsigned hyper.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// A bool (0 or 1).
    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.u32(v as u32)
    }

    /// Fixed-length opaque data (no length word), padded.
    pub fn fixed(&mut self, data: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(data);
        self.buf.extend_from_slice(&[0; 3][..pad(data.len())]);
        self
    }

    /// Variable-length opaque data: length word, bytes, padding.
    pub fn opaque(&mut self, data: &[u8]) -> &mut Self {
        self.u32(data.len() as u32).fixed(data)
    }

    /// A string (opaque of its UTF-8 bytes).
    pub fn string(&mut self, s: &str) -> &mut Self {
        self.opaque(s.as_bytes())
    }
}

/// The input ended before the item being decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Short;

impl fmt::Display for Short {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "XDR data ends early")
    }
}

impl std::error::Error for Short {}

/// Reads XDR items from a slice.
#[derive(Clone, Debug)]
pub struct Dec<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Dec<'a> {
    /// A decoder at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Dec { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes not yet consumed.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next `n` raw bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Short> {
        if self.remaining() < n {
            return Err(Short);
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Skip `n` bytes.
    pub fn skip(&mut self, n: usize) -> Result<(), Short> {
        self.take(n).map(|_| ())
    }

    /// An unsigned int.
    pub fn u32(&mut self) -> Result<u32, Short> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// An unsigned hyper.
    pub fn u64(&mut self) -> Result<u64, Short> {
        let hi = self.u32()? as u64;
        Ok(hi << 32 | self.u32()? as u64)
    }

    /// A bool (any non-zero word is true).
    pub fn bool(&mut self) -> Result<bool, Short> {
        Ok(self.u32()? != 0)
    }

    /// Fixed-length opaque data of `n` bytes, skipping its padding.
    pub fn fixed(&mut self, n: usize) -> Result<&'a [u8], Short> {
        let s = self.take(n)?;
        self.skip(pad(n))?;
        Ok(s)
    }

    /// Variable-length opaque data.
    pub fn opaque(&mut self) -> Result<&'a [u8], Short> {
        let n = self.u32()? as usize;
        self.fixed(n)
    }

    /// A string; invalid UTF-8 is replaced.
    pub fn string(&mut self) -> Result<String, Short> {
        Ok(String::from_utf8_lossy(self.opaque()?).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_item() {
        let mut buf = Vec::new();
        Enc::new(&mut buf)
            .u32(7)
            .u64(0x0102_0304_0506_0708)
            .bool(true)
            .bool(false)
            .opaque(b"abcde")
            .string("xy")
            .fixed(&[9; 8])
            .opaque(b"");
        assert_eq!(buf.len(), 4 + 8 + 4 + 4 + (4 + 8) + (4 + 4) + 8 + 4);
        assert_eq!(&buf[..4], &[0, 0, 0, 7]);
        assert_eq!(&buf[4..12], &[1, 2, 3, 4, 5, 6, 7, 8]);
        let mut d = Dec::new(&buf);
        assert_eq!(d.u32().unwrap(), 7);
        assert_eq!(d.u64().unwrap(), 0x0102_0304_0506_0708);
        assert!(d.bool().unwrap());
        assert!(!d.bool().unwrap());
        assert_eq!(d.opaque().unwrap(), b"abcde");
        assert_eq!(d.string().unwrap(), "xy");
        assert_eq!(d.fixed(8).unwrap(), &[9; 8]);
        assert_eq!(d.opaque().unwrap(), b"");
        assert_eq!(d.remaining(), 0);
        assert_eq!(d.u32(), Err(Short));
    }

    #[test]
    fn padding_is_zero_and_short_input_is_detected() {
        let mut buf = Vec::new();
        Enc::new(&mut buf).opaque(b"a");
        assert_eq!(buf, [0, 0, 0, 1, b'a', 0, 0, 0]);
        for cut in 0..buf.len() {
            assert_eq!(Dec::new(&buf[..cut]).opaque(), Err(Short), "cut {cut}");
        }
        assert_eq!(pad(0), 0);
        assert_eq!(pad(5), 3);
        assert_eq!(pad(8), 0);
    }
}
