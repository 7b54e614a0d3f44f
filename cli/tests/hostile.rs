//! Hostile and pathological inputs: each is refused (or indexed within bounds) on its own, and
//! none of them costs the other files of a build anything. The files are generated here.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use crate::cli::{self, json, path};

/// A PDF made of `objects` (numbered from 1; the first is the catalog), with its
/// cross-reference table.
fn pdf(objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"%PDF-1.7\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    let size = objects.len() + 1;
    out.extend_from_slice(format!("xref\n0 {size}\n0000000000 65535 f \n").as_bytes());
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    let trailer = format!("trailer\n<< /Size {size} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n");
    out.extend_from_slice(trailer.as_bytes());
    out
}

/// A stream object holding `data` as it is, with `dict` entries added.
fn stream(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut out = format!("<< /Length {} {dict} >>\nstream\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\nendstream");
    out
}

/// A PDF of `pages` pages of text in Helvetica.
fn pdf_with_pages(pages: usize) -> Vec<u8> {
    let font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".to_vec();
    let kids: Vec<String> = (0..pages).map(|i| format!("{} 0 R", 4 + 2 * i)).collect();
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!("<< /Type /Pages /Kids [{}] /Count {pages} >>", kids.join(" ")).into_bytes(),
        font,
    ];
    for i in 0..pages {
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
                 /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
                5 + 2 * i
            )
            .into_bytes(),
        );
        let text = format!("BT /F1 12 Tf 72 700 Td (The harbour of {}.) Tj ET", place(i));
        objects.push(stream("", text.as_bytes()));
    }
    pdf(&objects)
}

/// A made-up place name for page `i`, different on every page (a line that differs only by
/// its numbers would be taken for a running header).
fn place(i: usize) -> String {
    let (mut name, mut n) = (String::new(), i);
    loop {
        name.push(char::from(b'a' + (n % 26) as u8));
        n /= 26;
        if n == 0 {
            return name;
        }
    }
}

/// A PDF whose only page is its own parent and inherits its resources.
fn pdf_with_cyclic_page_tree() -> Vec<u8> {
    pdf(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 3 0 R /Contents 4 0 R >>".to_vec(),
        stream("", b"BT /F1 12 Tf 72 700 Td (Hello) Tj ET"),
    ])
}

/// A PDF whose content stream inflates to `inflated` zero bytes.
fn pdf_with_decompression_bomb(inflated: usize) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..inflated / zeros.len() {
        encoder.write_all(&zeros).unwrap();
    }
    let deflated = encoder.finish().unwrap();
    pdf(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>".to_vec(),
        stream("/Filter /FlateDecode", &deflated),
    ])
}

/// Pseudo-random bytes (xorshift), as a renamed image or archive would be.
fn random_bytes(len: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// Writes the hostile files into `dir`, each with the words its refusal must contain.
fn write_hostile(dir: &Path) -> Vec<(&'static str, &'static str)> {
    let files: Vec<(&str, Vec<u8>, &str)> = vec![
        // A page that is its own parent: read, not followed (it has no font, so no text).
        ("cyclic.pdf", pdf_with_cyclic_page_tree(), "no extractable text"),
        ("bomb.pdf", pdf_with_decompression_bomb(300 << 20), "inflate"),
        (
            "nested.html",
            format!("<html><body>{}x</body></html>", "<div>".repeat(100_000)).into_bytes(),
            "nested deeper than 512",
        ),
        ("noise.html", random_bytes(1 << 20), "binary data"),
        ("noise.txt", random_bytes(1 << 20), "binary data"),
        ("huge.txt", "lorem ipsum dolor ".repeat((65 << 20) / 18).into_bytes(), "64 MiB"),
    ];
    for (name, bytes, _) in &files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    // Larger than any document may be: refused before it is read (a sparse file).
    let oversized = std::fs::File::create(dir.join("oversized.txt")).unwrap();
    oversized.set_len((256 << 20) + 1).unwrap();
    let mut expected: Vec<(&str, &str)> = files.iter().map(|(n, _, e)| (*n, *e)).collect();
    expected.push(("oversized.txt", "256 MiB"));
    expected
}

/// Writes valid but pathological files into `dir`: they are indexed, within bounds.
fn write_pathological(dir: &Path) {
    std::fs::write(dir.join("word.txt"), "a".repeat(50_000_000)).unwrap();
    let headings: String = (0..200_000).map(|i| format!("# Heading {i}\n")).collect();
    std::fs::write(dir.join("headings.md"), headings).unwrap();
    std::fs::write(dir.join("pages.pdf"), pdf_with_pages(4_000)).unwrap();
}

#[test]
#[cfg(target_os = "linux")] // prlimit(1), from util-linux
fn a_mixed_directory_builds_its_good_files_and_lists_each_hostile_one() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    let demo: Vec<_> = std::fs::read_dir(cli::demo_corpus()).unwrap().map(|e| e.unwrap()).collect();
    for entry in &demo {
        std::fs::copy(entry.path(), corpus.join(entry.file_name())).unwrap();
    }
    let hostile = write_hostile(&corpus);
    write_pathological(&corpus);

    // The whole build runs with at most 1 GiB of data memory: past it, allocations fail and
    // the process aborts.
    let bundle = dir.path().join("mixed.bundle");
    let out = Command::new("prlimit")
        .arg(format!("--data={}", 1u64 << 30))
        .arg(env!("CARGO_BIN_EXE_edgerag"))
        .args(["build", path(&corpus), "-o", path(&bundle), "--no-embed", "--json"])
        .output()
        .expect("run edgerag under prlimit");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    let built: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    assert_eq!(built["documents"], demo.len() + 3, "{built}");
    let failed = built["failed"].as_array().unwrap();
    assert_eq!(failed.len(), hostile.len(), "{built}");
    for (name, reason) in &hostile {
        let entry = failed.iter().find(|f| f["source"].as_str().unwrap().ends_with(name));
        let error = entry.unwrap_or_else(|| panic!("{name} not in {built}"))["error"].as_str();
        let error = error.unwrap();
        assert!(error.contains(reason), "{name}: {error}");
        assert_eq!(error.lines().count(), 1, "{name}: {error}");
    }

    // Every good document is there, named relative to the directory, and searchable.
    let inspected = json(&["inspect", path(&bundle), "--json"]);
    let mut names: Vec<&str> = inspected["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["source"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    let mut expected: Vec<String> =
        demo.iter().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    expected.extend(["headings.md", "pages.pdf", "word.txt"].map(String::from));
    expected.sort_unstable();
    assert_eq!(names, expected);
    let pages =
        inspected["documents"].as_array().unwrap().iter().find(|d| d["source"] == "pages.pdf");
    assert_eq!(pages.unwrap()["pages"], 4_000);
    // The last page's text is found, on its page or in a chunk of a few short pages that
    // starts a little before it.
    let last = format!("The harbour of {}.", place(3_999));
    let hits = json(&["search", path(&bundle), &last, "-k", "1", "--mode", "bm25", "--json"]);
    let hit = &hits["results"][0];
    assert_eq!(hit["document"], "pages.pdf", "{hits}");
    assert!(hit["text"].as_str().unwrap().ends_with(&last), "{hits}");
    assert!((3_990..=4_000).contains(&hit["page"].as_u64().unwrap()), "{hits}");
}

#[test]
fn names_are_relative_to_the_arguments_and_never_absolute() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(docs.join("guide")).unwrap();
    let normans = cli::demo_corpus().join("normans.md");
    std::fs::copy(&normans, docs.join("guide/normans.md")).unwrap();
    let single = dir.path().join("steam.md");
    std::fs::copy(cli::demo_corpus().join("steam-engine.md"), &single).unwrap();
    let bundle = dir.path().join("x.bundle");
    let sources = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["build"];
        all.extend_from_slice(args);
        all.extend(["-o", path(&bundle), "--no-embed", "--json"]);
        json(&all);
        let inspected = json(&["inspect", path(&bundle), "--json"]);
        let documents = inspected["documents"].as_array().unwrap().iter();
        documents.map(|d| d["source"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(sources(&[path(&docs)]), ["guide/normans.md"]);
    assert_eq!(sources(&[path(&single)]), ["steam.md"]);
    assert_eq!(sources(&[path(&docs), path(&single)]), ["docs/guide/normans.md", "steam.md"]);
    // Names that would be the same take as many parent directories as tell them apart; a
    // file given twice is loaded once.
    for copy in ["v1/docs", "v2/docs", "a", "b"] {
        std::fs::create_dir_all(dir.path().join(copy)).unwrap();
        std::fs::copy(&normans, dir.path().join(copy).join("normans.md")).unwrap();
    }
    let at = |relative: &str| dir.path().join(relative);
    let (v1, v2) = (at("v1/docs"), at("v2/docs"));
    assert_eq!(sources(&[path(&v1), path(&v2)]), ["v1/docs/normans.md", "v2/docs/normans.md"]);
    let (a, b) = (at("a/normans.md"), at("b/normans.md"));
    assert_eq!(
        sources(&[path(&a), path(&b), path(&single)]),
        ["a/normans.md", "b/normans.md", "steam.md"]
    );
    assert_eq!(sources(&[path(&single), path(&single)]), ["steam.md"]);
    let bytes = std::fs::read(&bundle).unwrap();
    let root = dir.path().to_string_lossy();
    assert!(!bytes.windows(root.len()).any(|w| w == root.as_bytes()), "the bundle holds {root}");
}

#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = cli::demo_bundle(dir.path());
    // The reader goes away before the results are written, as `| head -0` would.
    let out = run_closing(&["search", path(&bundle), "Normandy", "-k", "50"], Closed::Stdout);
    assert!(out.status.success(), "{:?}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_closed_stderr_loses_the_warnings_not_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::copy(cli::demo_corpus().join("normans.md"), docs.join("normans.md")).unwrap();
    std::fs::write(docs.join("noise.txt"), [0u8, 1, 2, 3].repeat(1000)).unwrap();
    let bundle = dir.path().join("x.bundle");
    // Nobody reads the warning about noise.txt.
    let out =
        run_closing(&["build", path(&docs), "-o", path(&bundle), "--no-embed"], Closed::Stderr);
    assert!(out.status.success(), "{:?}: {}", out.status, String::from_utf8_lossy(&out.stdout));
    let inspected = json(&["inspect", path(&bundle), "--json"]);
    assert_eq!(inspected["documents"].as_array().unwrap().len(), 1, "{inspected}");
}

/// Which output of the command nobody reads.
enum Closed {
    Stdout,
    Stderr,
}

/// Runs `edgerag args` with both outputs piped and the `closed` one's reader gone from the start.
fn run_closing(args: &[&str], closed: Closed) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_edgerag"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    match closed {
        Closed::Stdout => drop(child.stdout.take()),
        Closed::Stderr => drop(child.stderr.take()),
    }
    child.wait_with_output().unwrap()
}
