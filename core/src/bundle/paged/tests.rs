use serde::{Deserialize, Serialize};

use super::*;
use crate::bundle::{FORMAT_VERSION, HEADER_LEN, MIN_READER_VERSION, header};

/// What a test file keeps in its directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Body {
    corpus: String,
    first_lines: Vec<u32>,
}

/// The lines of a real document, `per_slot` to a payload, `copies` times over.
fn text_payloads(per_slot: usize, copies: usize) -> Vec<Vec<u8>> {
    let text = include_str!("../../../tests/fixtures/normans.md");
    let lines: Vec<&str> = text.lines().collect();
    let payloads = lines.chunks(per_slot).map(|slot| slot.join("\n").into_bytes());
    payloads.cycle().take(lines.len().div_ceil(per_slot) * copies).collect()
}

/// The slot size of the sample's "lines".
const LINE_SLOT: u32 = 2048;

/// A file of three sections: `lines` (a line of the document a slot, the document four
/// times over), `none` (empty) and `paragraphs` (eight lines a slot); and their payloads.
fn sample() -> (Vec<u8>, Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let lines = text_payloads(1, 4);
    let paragraphs = text_payloads(8, 1);
    let mut writer = PagedWriter::new();
    let fixed = |payloads: &Vec<Vec<u8>>| {
        let payloads = payloads.clone();
        move |_| Ok(payloads.clone())
    };
    assert_eq!(writer.section("lines", LINE_SLOT, fixed(&lines)).unwrap(), 0);
    assert_eq!(writer.section("none", 64, |_| Ok(Vec::<Vec<u8>>::new())).unwrap(), 1);
    assert_eq!(writer.section("paragraphs", 8192, fixed(&paragraphs)).unwrap(), 2);
    let body = Body { corpus: "normans".into(), first_lines: vec![0, 8, 16] };
    let file = writer.finish(&body, VERSION, VERSION).unwrap();
    (file, lines, paragraphs)
}

fn open(file: &[u8], budget: usize) -> Result<PagedFile<InMemory, Body>> {
    now(PagedFile::open(InMemory(file.to_vec()), budget))
}

/// `payload` as a reader hands it out: zero-padded to the section's capacity.
fn padded(payload: &[u8], section: &SectionRef) -> Vec<u8> {
    let mut padded = payload.to_vec();
    padded.resize(section.capacity(), 0);
    padded
}

#[test]
fn slots_are_read_back_as_written_a_range_per_run_and_cached() {
    let (file, lines, paragraphs) = sample();
    let paged = open(&file, 1 << 20).unwrap();
    assert_eq!(paged.body().first_lines, [0, 8, 16]);
    let names: Vec<_> = paged.sections().iter().map(|s| (s.name.as_str(), s.slots)).collect();
    let count = u32::try_from(lines.len()).unwrap();
    assert_eq!(names, [("lines", count), ("none", 0), ("paragraphs", paragraphs.len() as u32)]);
    assert_eq!(paged.section("paragraphs"), Some(2));
    let section = paged.sections()[0].clone();
    assert_eq!(
        section.proof_len(),
        32 * (usize::BITS - (lines.len() - 1).leading_zeros()) as usize
    );
    assert_eq!(section.capacity() + section.proof_len(), LINE_SLOT as usize);
    let opened = paged.io();
    assert_eq!(opened.requests, 1, "the header and the directory in one read");
    assert!(opened.bytes <= OPEN_READ);

    // Slots 4, 5 and 6 are one run, the last and 0 are runs of their own; 0 is asked twice.
    let wanted = [0, 5, count - 1, 4, 6, 0];
    let got = now(paged.slots(0, &wanted)).unwrap();
    for (slot, bytes) in wanted.iter().zip(&got) {
        assert_eq!(**bytes, *padded(&lines[*slot as usize], &section), "slot {slot}");
    }
    let read = paged.io();
    assert_eq!(read.requests - opened.requests, 3);
    assert_eq!(read.round_trips - opened.round_trips, 1, "the three ranges in one read");
    assert_eq!(read.bytes - opened.bytes, 5 * u64::from(LINE_SLOT));
    // Again: from the cache. Another section's slots are its own.
    now(paged.slots(0, &wanted)).unwrap();
    assert_eq!(paged.io(), read);
    let last = paragraphs.len() as u32 - 1;
    let got = now(paged.slots(2, &[last])).unwrap();
    assert_eq!(*got[0], *padded(&paragraphs[last as usize], &paged.sections()[2]));
    assert_eq!(now(paged.slots(1, &[])).unwrap().len(), 0);
    // Each section's share of what was read (the sections read), opening left out.
    let slot = |section: usize| u64::from(paged.sections()[section].slot);
    let reads = paged.reads();
    let lines = Io { requests: 3, bytes: 5 * slot(0), round_trips: 1 };
    let last = Io { requests: 1, bytes: slot(2), round_trips: 1 };
    let shares = [("lines".to_owned(), lines), ("paragraphs".to_owned(), last)];
    assert_eq!(reads.sections, shares.into_iter().collect());
    assert_eq!(reads.total.requests - opened.requests, 4);
    assert_eq!(reads.total.round_trips - opened.round_trips, 2);
    assert_eq!(reads.total.bytes - opened.bytes, 5 * slot(0) + slot(2));
}

#[test]
fn a_section_is_packed_again_when_its_proofs_need_the_room() {
    let mut writer = PagedWriter::new();
    let mut capacities = Vec::new();
    // 300 slots of 256 bytes need proofs of 9 hashes (288 bytes): no room is left.
    let error = writer.section("tight", 256, |capacity| {
        capacities.push(capacity);
        Ok(vec![vec![1u8; 20]; 300])
    });
    assert!(error.unwrap_err().to_string().contains("leave no room"), "{capacities:?}");
    assert_eq!(capacities, [256]);

    // Twenty records of 100 bytes, as many to a slot as fit: 4 slots of 512 bytes need
    // 2 hashes, and then 5 slots of 448 need 3.
    capacities.clear();
    let index = writer
        .section("packed", 512, |capacity| {
            capacities.push(capacity);
            let per_slot = capacity / 100;
            Ok(vec![vec![7u8; 100 * per_slot]; 20usize.div_ceil(per_slot)])
        })
        .unwrap();
    assert_eq!(capacities, [512, 448, 416]);
    let file = writer.finish(0u8, VERSION, VERSION).unwrap();
    let paged: PagedFile<_, u8> = now(PagedFile::open(InMemory(file), 1 << 20)).unwrap();
    let section = &paged.sections()[index as usize];
    assert_eq!((section.slots, section.capacity()), (5, 416));
    let all: Vec<u32> = (0..section.slots).collect();
    assert!(now(paged.slots(index, &all)).unwrap().iter().all(|p| p[..400] == [7; 400]));
}

#[test]
fn the_cache_holds_at_most_its_budget() {
    let (file, lines, _) = sample();
    let budget = 16 << 10;
    let paged = open(&file, budget).unwrap();
    let all: Vec<u32> = (0..lines.len() as u32).collect();
    let got = now(paged.slots(0, &all)).unwrap();
    assert_eq!(got.len(), lines.len(), "slots are handed out whatever the budget");
    assert!(paged.cached_bytes() <= budget, "{} bytes held", paged.cached_bytes());
    assert!(paged.cached_bytes() > budget / 2, "{} bytes held", paged.cached_bytes());
}

#[test]
fn slots_that_do_not_exist_are_errors() {
    let (file, lines, _) = sample();
    let paged = open(&file, 1 << 20).unwrap();
    let error = now(paged.slots(0, &[lines.len() as u32])).unwrap_err().to_string();
    assert!(
        error.contains("section \"lines\" has") && error.contains("slots, not slot"),
        "{error}"
    );
    assert!(matches!(now(paged.slots(3, &[0])), Err(Error::Decode(_))));
    assert!(matches!(now(paged.slots(1, &[0])), Err(Error::Decode(_))), "an empty section");
}

#[test]
fn a_changed_byte_anywhere_is_found_and_named() {
    let (file, _, _) = sample();
    let directory_len = u64::from_le_bytes(file[16..24].try_into().unwrap());
    let data = HEADER_LEN + usize::try_from(directory_len).unwrap();

    // A byte of the directory: the file does not open.
    let mut changed = file.clone();
    changed[HEADER_LEN + 3] ^= 1;
    assert!(matches!(open(&changed, 1 << 20), Err(Error::Corrupted)));

    // A byte of slot 2 of "lines", in its payload or its proof: that slot is refused, by
    // name, even when read with its neighbours; the others still read.
    for at in [10, LINE_SLOT as usize - 1] {
        let mut changed = file.clone();
        changed[data + 2 * LINE_SLOT as usize + at] ^= 0x20;
        let paged = open(&changed, 1 << 20).unwrap();
        let error = now(paged.slots(0, &[1, 2, 3])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "corrupted bundle: slot 2 of section \"lines\" does not match its hash"
        );
        assert_eq!(now(paged.slots(0, &[3, 1])).unwrap().len(), 2);
    }
}

#[test]
fn a_short_file_names_the_slot_it_ends_in() {
    let (file, _, paragraphs) = sample();
    let cut = &file[..file.len() - 1];
    let paged = open(cut, 1 << 20).unwrap();
    // The last slot of the last section is the last thing in the file.
    let last = paragraphs.len() as u32 - 1;
    let error = now(paged.slots(2, &[last - 1, last])).unwrap_err().to_string();
    let expected = format!("truncated bundle: slot {last} of section \"paragraphs\" lies past");
    assert!(error.starts_with(&expected), "{error}");
    assert!(matches!(open(&file[..HEADER_LEN + 10], 1 << 20), Err(Error::Truncated { .. })));
    assert!(matches!(open(&file[..20], 1 << 20), Err(Error::Truncated { .. })));
    assert!(matches!(open(b"%PDF-1.7", 1 << 20), Err(Error::NotABundle)));
}

#[test]
fn only_paged_versions_open_and_hostile_directories_are_refused() {
    let whole = include_bytes!("../../../tests/fixtures/bundle-v3.bundle");
    assert!(matches!(open(whole, 1 << 20), Err(Error::TooOld { found: 3, .. })));
    let newer = PagedWriter::new().finish(0u8, VERSION + 1, VERSION + 1).unwrap();
    assert!(matches!(open(&newer, 1 << 20), Err(Error::TooNew { .. })));
    // A flag this reader does not define (the next bit): the file is laid out in a way it
    // cannot read.
    let mut flagged = PagedWriter::new().finish(0u8, VERSION, VERSION).unwrap();
    flagged[12..16].copy_from_slice(&(FLAGS + 1).to_le_bytes());
    let error = open(&flagged, 1 << 20).unwrap_err().to_string();
    assert!(error.contains(&format!("flags {:#010x} are set", FLAGS + 1)), "{error}");
    assert!((FORMAT_VERSION, MIN_READER_VERSION) < (VERSION, VERSION));

    // Directories whose hash holds but whose sections do not.
    let section =
        |name: &str, slot, slots| SectionRef { name: name.into(), slot, slots, root: [0; 32] };
    for (sections, problem) in [
        (vec![section("huge", MAX_SLOT + 1, 1)], "slots of"),
        (vec![section("proof only", 64, 5)], "slots of 64 bytes for 5 slots"),
    ] {
        let body = Body { corpus: String::new(), first_lines: vec![] };
        let directory = postcard::to_allocvec(&Directory { body, sections }).unwrap();
        let mut file = header(VERSION, VERSION, 0, &directory);
        file.extend_from_slice(&directory);
        let error = open(&file, 1 << 20).unwrap_err();
        assert!(matches!(&error, Error::Decode(e) if e.contains(problem)), "{error}");
    }
    // Sections far larger than the file: it opens, and their slots are not there.
    let far = vec![section("far", MAX_SLOT, u32::MAX), section("farther", MAX_SLOT, u32::MAX)];
    let directory = postcard::to_allocvec(&Directory { body: 0u8, sections: far }).unwrap();
    let mut file = header(VERSION, VERSION, 0, &directory);
    file.extend_from_slice(&directory);
    let paged: PagedFile<_, u8> = now(PagedFile::open(InMemory(file), 1 << 20)).unwrap();
    let error = now(paged.slots(1, &[u32::MAX - 1])).unwrap_err().to_string();
    let expected = "truncated bundle: slot 4294967294 of section \"farther\" lies past the end";
    assert!(error.starts_with(expected), "{error}");

    // A directory longer than a reader accepts, and one that is not a directory.
    let mut file = header(VERSION, VERSION, 0, b"");
    file[16..24].copy_from_slice(&(MAX_DIRECTORY + 1).to_le_bytes());
    assert!(matches!(open(&file, 1 << 20), Err(Error::Decode(e)) if e.contains("directory of")));
    let mut file = header(VERSION, VERSION, 0, b"\xff\xff\xff");
    file.extend_from_slice(b"\xff\xff\xff");
    assert!(matches!(open(&file, 1 << 20), Err(Error::Decode(e)) if e.starts_with("directory: ")));
}
