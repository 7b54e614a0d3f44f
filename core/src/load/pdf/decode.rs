//! Stream decoding under a budget: every byte a filter reads and every byte it produces (and
//! every byte of a stream without filters, which is copied) is counted, with a nominal byte
//! for each filter of the chain, and decoding stops with [`Error::Limit`] as soon as the
//! streams decoded for a document pass [`limits::inflate_budget`] (a stream decoded twice
//! counts twice). The bytes read count because decoding them is work even when it produces
//! nothing (ASCII85 over white space, deflate's empty blocks): a stream decoded again and
//! again is bounded like one inflating. Nothing here trusts a declared size.
//!
//! Filters: `FlateDecode`, `LZWDecode` (with PNG and TIFF predictors), `ASCIIHexDecode`,
//! `ASCII85Decode`, `RunLengthDecode`, and the `Identity` crypt filter. Image codecs (DCT,
//! JPX, JBIG2, CCITT) carry no text: such streams are reported as [`Decoded::Image`].

use std::io::Read;

use pdf_extract::{Dictionary, Object};

use crate::{Error, Result, limits};

/// Output produced per read while inflating, so the budget is checked often.
const CHUNK: usize = 64 << 10;

/// What may still be spent on one document: bytes inflated ([`Budget::for_source`]) or
/// pdf-extract's work ([`Budget::work_for_source`]).
#[derive(Debug)]
pub(super) struct Budget {
    left: usize,
    limit: usize,
    /// The error once the budget runs out, given the limit.
    exceeded: fn(usize) -> Error,
}

impl Budget {
    /// The inflate budget of a file of `source_len` bytes ([`limits::inflate_budget`]).
    pub(super) fn for_source(source_len: usize) -> Self {
        let limit = limits::inflate_budget(source_len);
        Self { left: limit, limit, exceeded: inflate_limit }
    }

    /// The work budget of a file of `source_len` bytes ([`limits::pdf_work_budget`]).
    pub(super) fn work_for_source(source_len: usize) -> Self {
        let limit = limits::pdf_work_budget(source_len);
        Self { left: limit, limit, exceeded: limits::pdf_work_exceeded }
    }

    /// The whole budget.
    pub(super) fn limit(&self) -> usize {
        self.limit
    }

    /// Takes `n` from the budget.
    ///
    /// # Errors
    /// [`Error::Limit`] when less than `n` is left.
    pub(super) fn take(&mut self, n: usize) -> Result<()> {
        match self.left.checked_sub(n) {
            Some(left) => {
                self.left = left;
                Ok(())
            }
            None => {
                self.left = 0;
                Err((self.exceeded)(self.limit))
            }
        }
    }
}

/// [`Error::Limit`] for a document whose streams inflate past `limit` bytes.
fn inflate_limit(limit: usize) -> Error {
    Error::Limit(format!(
        "the PDF's streams inflate past {} (at most {} times the file's size plus {}, never more than {})",
        limits::size(limit),
        limits::MAX_INFLATE_RATIO,
        limits::size(limits::INFLATE_ALLOWANCE),
        limits::size(limits::MAX_INFLATED_BYTES),
    ))
}

/// A decoded stream.
#[derive(Debug)]
pub(super) enum Decoded {
    /// The stream's bytes with every filter undone.
    Bytes(Vec<u8>),
    /// The stream is encoded with an image codec (or a filter edgerag does not know).
    Image,
}

/// The filters of a stream dictionary with their parameters, in decoding order. (`/F` and
/// `/DP` abbreviate them only in inline images, which are never decoded: in a stream's
/// dictionary `/F` names an external file.)
pub(super) fn filters(dict: &Dictionary) -> Vec<(&[u8], Option<&Dictionary>)> {
    let names: Vec<&[u8]> = match dict.get(b"Filter") {
        Ok(Object::Name(name)) => vec![name.as_slice()],
        Ok(Object::Array(items)) => items.iter().filter_map(|o| o.as_name().ok()).collect(),
        _ => Vec::new(),
    };
    let params = dict.get(b"DecodeParms").ok();
    names
        .into_iter()
        .enumerate()
        .map(|(i, name)| {
            let param = match params {
                Some(Object::Dictionary(d)) if i == 0 => Some(d),
                Some(Object::Array(items)) => items.get(i).and_then(|o| o.as_dict().ok()),
                _ => None,
            };
            (name, param)
        })
        .collect()
}

fn is_known(name: &[u8]) -> bool {
    matches!(
        name,
        b"FlateDecode"
            | b"Fl"
            | b"LZWDecode"
            | b"LZW"
            | b"ASCIIHexDecode"
            | b"AHx"
            | b"ASCII85Decode"
            | b"A85"
            | b"RunLengthDecode"
            | b"RL"
            | b"Crypt"
    )
}

/// Undoes the stream's filters, counting against `budget` every byte each filter reads and
/// produces, and a byte for each filter (the bytes of a stream without filters once: they are
/// copied). Broken data decodes as far as it goes (as PDF readers do). Output is charged before
/// it is written ([`Output`]), so the budget is never exceeded, not even for a moment.
///
/// # Errors
/// [`Error::Limit`] when the budget runs out.
pub(super) fn decode(dict: &Dictionary, data: &[u8], budget: &mut Budget) -> Result<Decoded> {
    let chain = filters(dict);
    budget.take(chain.len())?;
    if chain.iter().any(|(name, _)| !is_known(name)) {
        return Ok(Decoded::Image);
    }
    let mut current: Option<Vec<u8>> = None;
    for (name, params) in chain {
        let input = current.as_deref().unwrap_or(data);
        let mut out = Output { bytes: Vec::new(), budget: &mut *budget };
        match name {
            b"FlateDecode" | b"Fl" => inflate(input, &mut out)?,
            b"LZWDecode" | b"LZW" => lzw(input, params, &mut out)?,
            b"ASCIIHexDecode" | b"AHx" => ascii_hex(input, &mut out)?,
            b"ASCII85Decode" | b"A85" => ascii85(input, &mut out)?,
            b"RunLengthDecode" | b"RL" => run_length(input, &mut out)?,
            _ => continue, // Crypt: lopdf has decrypted already (Identity otherwise).
        }
        let bytes = match name {
            b"FlateDecode" | b"Fl" | b"LZWDecode" | b"LZW" => predict(out.bytes, params),
            _ => out.bytes,
        };
        current = Some(bytes);
    }
    match current {
        Some(bytes) => Ok(Decoded::Bytes(bytes)),
        None => {
            let mut out = Output { bytes: Vec::new(), budget };
            out.write(data)?;
            Ok(Decoded::Bytes(out.bytes))
        }
    }
}

/// A filter's output, which grows only once the budget has been charged for it; the filter
/// charges the bytes it reads to it too.
struct Output<'b> {
    bytes: Vec<u8>,
    budget: &'b mut Budget,
}

impl Output<'_> {
    /// Charges `n` bytes read.
    fn read(&mut self, n: usize) -> Result<()> {
        self.budget.take(n)
    }

    /// Appends `data`, charged first.
    fn write(&mut self, data: &[u8]) -> Result<()> {
        self.budget.take(data.len())?;
        self.bytes.extend_from_slice(data);
        Ok(())
    }

    /// Appends `n` times `byte`, charged first.
    fn fill(&mut self, byte: u8, n: usize) -> Result<()> {
        self.budget.take(n)?;
        self.bytes.resize(self.bytes.len() + n, byte);
        Ok(())
    }
}

/// The part of `input` a filter whose data ends at the first `end` byte reads, charged.
fn until<'a>(input: &'a [u8], end: u8, out: &mut Output<'_>) -> Result<&'a [u8]> {
    let len = input.iter().position(|&b| b == end).map_or(input.len(), |at| at + 1);
    out.read(len)?;
    Ok(input.get(..len).unwrap_or_default())
}

/// Reads all of `reader` (a decompressor, which has read `total_in` bytes of its input so
/// far) chunk by chunk, its input read charged as it goes. A read error ends the data
/// (keeping what came before it).
fn read_counted<R: Read>(
    mut reader: R,
    total_in: impl Fn(&R) -> u64,
    out: &mut Output<'_>,
) -> Result<()> {
    let mut chunk = vec![0u8; CHUNK];
    let mut charged_in = 0u64;
    loop {
        let read = reader.read(&mut chunk);
        let consumed = total_in(&reader);
        out.read(usize::try_from(consumed.saturating_sub(charged_in)).unwrap_or(usize::MAX))?;
        charged_in = consumed;
        match read {
            Ok(0) | Err(_) => return Ok(()),
            Ok(n) => out.write(chunk.get(..n).unwrap_or_default())?,
        }
    }
}

/// zlib-wrapped deflate; raw deflate when the zlib header is broken.
fn inflate(input: &[u8], out: &mut Output<'_>) -> Result<()> {
    use flate2::read::{DeflateDecoder, ZlibDecoder};
    read_counted(ZlibDecoder::new(input), ZlibDecoder::total_in, out)?;
    if out.bytes.is_empty() && input.len() > 2 {
        let raw = DeflateDecoder::new(input.get(2..).unwrap_or_default());
        read_counted(raw, DeflateDecoder::total_in, out)?;
    }
    Ok(())
}

fn lzw(input: &[u8], params: Option<&Dictionary>, out: &mut Output<'_>) -> Result<()> {
    use weezl::{BitOrder, LzwStatus, decode::Decoder};
    let early_change = int_param(params, b"EarlyChange").is_none_or(|v| v != 0);
    let mut decoder = if early_change {
        Decoder::with_tiff_size_switch(BitOrder::Msb, 8)
    } else {
        Decoder::new(BitOrder::Msb, 8)
    };
    let mut chunk = vec![0u8; CHUNK];
    let mut rest = input;
    loop {
        let result = decoder.decode_bytes(rest, &mut chunk);
        out.read(result.consumed_in)?;
        out.write(chunk.get(..result.consumed_out).unwrap_or_default())?;
        rest = rest.get(result.consumed_in..).unwrap_or_default();
        match result.status {
            Ok(LzwStatus::Ok) => {}
            Ok(LzwStatus::NoProgress | LzwStatus::Done) | Err(_) => return Ok(()),
        }
    }
}

fn ascii_hex(input: &[u8], out: &mut Output<'_>) -> Result<()> {
    let mut high = None;
    for &b in until(input, b'>', out)? {
        let Some(v) = (b as char).to_digit(16) else { continue };
        let v = v as u8;
        match high.take() {
            Some(h) => out.write(&[h << 4 | v])?,
            None => high = Some(v),
        }
    }
    if let Some(h) = high {
        out.write(&[h << 4])?;
    }
    Ok(())
}

/// `z` (one byte) writes four.
fn ascii85(input: &[u8], out: &mut Output<'_>) -> Result<()> {
    let mut group = [0u8; 5];
    let mut n = 0;
    for &b in until(input, b'~', out)? {
        match b {
            b'z' if n == 0 => out.write(&[0; 4])?,
            b'!'..=b'u' => {
                if let Some(slot) = group.get_mut(n) {
                    *slot = b - b'!';
                }
                n += 1;
                if n == 5 {
                    out.write(&ascii85_group(&group))?;
                    n = 0;
                }
            }
            _ => {}
        }
    }
    if n > 1 {
        for slot in group.iter_mut().skip(n) {
            *slot = 84;
        }
        out.write(ascii85_group(&group).get(..n - 1).unwrap_or_default())?;
    }
    Ok(())
}

fn ascii85_group(group: &[u8; 5]) -> [u8; 4] {
    let value = group.iter().fold(0u64, |acc, &d| acc * 85 + u64::from(d));
    (value as u32).to_be_bytes()
}

fn run_length(input: &[u8], out: &mut Output<'_>) -> Result<()> {
    let mut i = 0;
    while let Some(&len) = input.get(i) {
        i += 1;
        match len {
            128 => break,
            0..=127 => {
                let n = usize::from(len) + 1;
                let run = input.get(i..(i + n).min(input.len())).unwrap_or_default();
                out.read(1 + run.len())?;
                out.write(run)?;
                i += n;
            }
            _ => {
                let Some(&b) = input.get(i) else { break };
                i += 1;
                out.read(2)?;
                out.fill(b, 257 - usize::from(len))?;
            }
        }
    }
    Ok(())
}

fn int_param(params: Option<&Dictionary>, key: &[u8]) -> Option<i64> {
    params?.get(key).ok()?.as_i64().ok()
}

/// Undoes a PNG (10–15) or TIFF (2) predictor. Output is never larger than the input, so it
/// needs no budget; parameters out of range leave the data as it is.
fn predict(data: Vec<u8>, params: Option<&Dictionary>) -> Vec<u8> {
    let predictor = int_param(params, b"Predictor").unwrap_or(1);
    let colors = int_param(params, b"Colors").unwrap_or(1);
    let bits = int_param(params, b"BitsPerComponent").unwrap_or(8);
    let columns = int_param(params, b"Columns").unwrap_or(1);
    if !(1..=32).contains(&colors) || ![1, 2, 4, 8, 16].contains(&bits) {
        return data;
    }
    // In range, so at most 32 * 16 bits a pixel.
    let Ok(pixel_bits) = usize::try_from(colors * bits) else { return data };
    let row_bits =
        usize::try_from(columns).ok().filter(|&c| c >= 1).and_then(|c| c.checked_mul(pixel_bits));
    let Some(row_bits) = row_bits else { return data };
    let row = row_bits.div_ceil(8);
    let pixel = pixel_bits.div_ceil(8);
    if row == 0 || row > data.len().max(1) {
        return data;
    }
    match predictor {
        10..=15 => png_unpredict(&data, row, pixel),
        2 if bits == 8 => tiff_unpredict(data, row, pixel),
        _ => data,
    }
}

fn png_unpredict(data: &[u8], row: usize, pixel: usize) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::with_capacity(data.len());
    let mut previous = vec![0u8; row];
    for line in data.chunks(row + 1) {
        let Some((&kind, raw)) = line.split_first() else { break };
        let mut current = raw.to_vec();
        current.resize(row, 0);
        for i in 0..row {
            let left = if i >= pixel { current.get(i - pixel).copied().unwrap_or(0) } else { 0 };
            let up = previous.get(i).copied().unwrap_or(0);
            let up_left =
                if i >= pixel { previous.get(i - pixel).copied().unwrap_or(0) } else { 0 };
            let add = match kind {
                1 => left,
                2 => up,
                3 => ((u16::from(left) + u16::from(up)) / 2) as u8,
                4 => paeth(left, up, up_left),
                _ => 0,
            };
            if let Some(c) = current.get_mut(i) {
                *c = c.wrapping_add(add);
            }
        }
        out.extend_from_slice(current.get(..raw.len().min(row)).unwrap_or_default());
        previous = current;
    }
    out
}

fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let p = i16::from(a) + i16::from(b) - i16::from(c);
    let (pa, pb, pc) =
        ((p - i16::from(a)).abs(), (p - i16::from(b)).abs(), (p - i16::from(c)).abs());
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

fn tiff_unpredict(mut data: Vec<u8>, row: usize, pixel: usize) -> Vec<u8> {
    for line in data.chunks_mut(row) {
        for i in pixel..line.len() {
            let left = line.get(i - pixel).copied().unwrap_or(0);
            if let Some(c) = line.get_mut(i) {
                *c = c.wrapping_add(left);
            }
        }
    }
    data
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).expect("in memory");
        e.finish().expect("in memory")
    }

    fn dict(filter: &str) -> Dictionary {
        let mut d = Dictionary::new();
        d.set("Filter", Object::Name(filter.as_bytes().to_vec()));
        d
    }

    fn bytes(decoded: Decoded) -> Vec<u8> {
        match decoded {
            Decoded::Bytes(b) => b,
            Decoded::Image => panic!("not an image"),
        }
    }

    #[test]
    fn filters_decode() {
        let mut budget = Budget::for_source(0);
        let flate = decode(&dict("FlateDecode"), &zlib(b"BT (Hi) Tj ET"), &mut budget);
        assert_eq!(bytes(flate.expect("decodes")), b"BT (Hi) Tj ET");
        let hex = decode(&dict("ASCIIHexDecode"), b"48 69 7>", &mut budget);
        assert_eq!(bytes(hex.expect("decodes")), b"Hip");
        let a85 = decode(&dict("ASCII85Decode"), b"87cURD]i,\"Ebo80~>", &mut budget);
        assert_eq!(bytes(a85.expect("decodes")), b"Hello World!");
        let rl = decode(&dict("RunLengthDecode"), &[1, b'a', b'b', 254, b'c', 128], &mut budget);
        assert_eq!(bytes(rl.expect("decodes")), b"abccc");
        let lzw = decode(
            &dict("LZWDecode"),
            &[0x80, 0x0b, 0x60, 0x50, 0x22, 0x0c, 0x0c, 0x85, 0x01],
            &mut budget,
        );
        assert_eq!(bytes(lzw.expect("decodes")), b"-----A---B");
        assert!(matches!(decode(&dict("DCTDecode"), b"\xff\xd8", &mut budget), Ok(Decoded::Image)));
    }

    #[test]
    fn png_predictor_rows() {
        let mut d = dict("FlateDecode");
        let mut parms = Dictionary::new();
        parms.set("Predictor", 12);
        parms.set("Columns", 3);
        d.set("DecodeParms", Object::Dictionary(parms));
        // Row 1 "Up" from zeros, row 2 "Up" adds 1 to each byte.
        let raw = [2, 1, 2, 3, 2, 1, 1, 1];
        let out = decode(&d, &zlib(&raw), &mut Budget::for_source(0)).expect("decodes");
        assert_eq!(bytes(out), [1, 2, 3, 2, 3, 4]);
    }

    /// Output is charged before it is written: a write the budget cannot pay for is refused
    /// and leaves the output as it was (`z`, one byte, writes four).
    #[test]
    fn output_is_charged_before_it_is_written() {
        let mut budget = Budget::for_source(0);
        budget.take(limits::INFLATE_ALLOWANCE - 8).expect("within the budget");
        let mut out = Output { bytes: Vec::new(), budget: &mut budget };
        // Three bytes read, then four written; the second `z` is refused with one byte left.
        let result = ascii85(b"zz~", &mut out);
        assert!(matches!(result, Err(Error::Limit(_))), "{result:?}");
        assert_eq!(out.bytes, [0; 4]);
        let mut out = Output { bytes: Vec::new(), budget: &mut Budget::for_source(0) };
        let result = run_length(&[129, b'x'].repeat(8 << 10), &mut out);
        assert!(matches!(result, Err(Error::Limit(_))), "{result:?}");
        assert!(out.bytes.len() <= limits::INFLATE_ALLOWANCE, "{}", out.bytes.len());
    }

    #[test]
    fn inflating_past_the_budget_is_a_limit_error() {
        let bomb = zlib(&vec![b' '; limits::INFLATE_ALLOWANCE + 1]);
        let result = decode(&dict("FlateDecode"), &bomb, &mut Budget::for_source(0));
        assert!(
            matches!(&result, Err(Error::Limit(m)) if m.contains("inflate past 1 MiB")),
            "{result:?}"
        );
    }
}
