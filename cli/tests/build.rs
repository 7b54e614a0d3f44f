//! `edgerag build` and `edgerag inspect`.

use crate::cli::{self, edgerag, json, one_error_line, path};

#[test]
fn build_reports_counts_and_inspect_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("demo.bundle");
    let corpus = cli::demo_corpus();
    let built = json(&["build", path(&corpus), "-o", path(&bundle), "--no-embed", "--json"]);
    assert_eq!(built["documents"], 6, "{built}");
    assert!(built["chunks"].as_u64().unwrap() > 50, "{built}");
    for key in ["keywords", "edges"] {
        assert!(built[key].as_u64().unwrap() > 0, "{key}: {built}");
    }
    assert_eq!(built["bytes"].as_u64().unwrap(), std::fs::metadata(&bundle).unwrap().len());
    assert_eq!(built["failed"], serde_json::json!([]));
    assert_eq!(built["skipped"], 0, "{built}");

    let inspected = json(&["inspect", path(&bundle), "--json"]);
    assert_eq!(inspected["manifest"]["counts"]["chunks"], built["chunks"]);
    assert_eq!(inspected["manifest"]["corpus"], "demo");
    assert_eq!(inspected["documents"].as_array().unwrap().len(), 6);
    let pdf = inspected["documents"].as_array().unwrap().iter().find(|d| d["kind"] == "pdf");
    assert_eq!(pdf.unwrap()["pages"], 17);
}

#[test]
fn bad_files_are_reported_and_skipped_unless_strict() {
    let dir = tempfile::tempdir().unwrap();
    let good = cli::demo_corpus().join("normans.md");
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "").unwrap();
    let broken = dir.path().join("broken.pdf");
    std::fs::write(&broken, b"%PDF-1.5\n1 0 obj\n<< /Type /Catalog").unwrap();
    let latin1 = dir.path().join("latin1.md");
    std::fs::write(&latin1, b"caf\xe9").unwrap();
    let bundle = dir.path().join("out.bundle");
    let args =
        ["build", path(&good), path(&empty), path(&broken), path(&latin1), "-o", path(&bundle)];

    let mut lenient = args.to_vec();
    lenient.push("--json");
    let built = json(&lenient);
    assert_eq!(built["documents"], 1);
    let failed = built["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 3, "{built}");
    assert!(failed[0]["error"].as_str().unwrap().contains("empty"), "{built}");
    assert!(failed[1]["error"].as_str().unwrap().contains("PDF"), "{built}");
    assert!(failed[2]["error"].as_str().unwrap().contains("UTF-8"), "{built}");

    std::fs::remove_file(&bundle).unwrap();
    let mut strict = args.to_vec();
    strict.push("--strict");
    let line = one_error_line(&edgerag(&strict));
    assert!(line.contains("empty.txt") && line.contains("empty"), "{line}");
    assert!(!bundle.exists(), "a failed build must not leave a bundle behind");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3, "no temporary files left");
}

#[test]
fn unreadable_inputs_and_outputs_fail_with_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.md");
    let out =
        edgerag(&["build", path(&missing), "-o", path(&dir.path().join("x.bundle")), "--no-embed"]);
    assert!(one_error_line(&out).contains("missing.md"));

    let not_bundle = cli::demo_corpus().join("normans.md");
    let line = one_error_line(&edgerag(&["inspect", path(&not_bundle)]));
    assert!(line.contains("normans.md") && line.contains("not an edgerag bundle"), "{line}");

    let bundle = cli::demo_bundle(dir.path());
    let truncated = dir.path().join("truncated.bundle");
    let bytes = std::fs::read(&bundle).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let line = one_error_line(&edgerag(&["search", path(&truncated), "normans"]));
    assert!(line.contains("truncated.bundle") && line.contains("truncated"), "{line}");

    let no_dir = dir.path().join("no/such/dir/out.bundle");
    let corpus = cli::demo_corpus();
    let args = ["build", path(&corpus), "-o", path(&no_dir), "--no-embed"];
    let line = one_error_line(&edgerag(&args));
    assert!(line.contains("out.bundle"), "{line}");
}

#[test]
fn a_skipped_file_is_warned_about_on_one_line_whatever_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::copy(cli::demo_corpus().join("normans.md"), docs.join("normans.md")).unwrap();
    std::fs::write(docs.join("two\nlines.txt"), "").unwrap();
    let bundle = dir.path().join("out.bundle");
    let out = edgerag(&["build", path(&docs), "-o", path(&bundle), "--no-embed"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].contains("two\\nlines.txt") && warnings[0].contains("empty"), "{stderr}");
}

#[test]
fn directories_are_walked_and_unsupported_files_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs/nested");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::copy(cli::demo_corpus().join("normans.md"), docs.join("normans.md")).unwrap();
    std::fs::write(docs.join("notes.docx"), b"PK\x03\x04").unwrap();
    std::fs::write(dir.path().join("docs/.hidden.md"), "# Hidden\n\nNot indexed.").unwrap();
    let bundle = dir.path().join("docs.bundle");
    let docs = dir.path().join("docs");
    let built = json(&["build", path(&docs), "-o", path(&bundle), "--no-embed", "--json"]);
    assert_eq!(built["documents"], 1, "{built}");
    assert_eq!(built["skipped"], 1, "{built}");

    let explicit = dir.path().join("docs/nested/notes.docx");
    let line =
        one_error_line(&edgerag(&["build", path(&explicit), "-o", path(&bundle), "--strict"]));
    assert!(line.contains("notes.docx") && line.contains("unsupported file type"), "{line}");
}

#[test]
fn malformed_pdfs_give_one_error_line_never_a_panic_message() {
    // Deterministic corruptions of a real PDF. They once made the PDF parser panic (caught
    // natively, but fatal in wasm); the loader now checks what the parser would trip on.
    let dir = tempfile::tempdir().unwrap();
    let pdf = std::fs::read(cli::demo_corpus().join("shared-mime-info-spec.pdf")).unwrap();
    let bundle = dir.path().join("out.bundle");
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut parser_gave_up = 0;
    for round in 0..60 {
        let mut bytes = pdf.clone();
        for _ in 0..8 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let at = (state % bytes.len() as u64) as usize;
            bytes[at] = (state >> 32) as u8;
        }
        let file = dir.path().join(format!("corrupt-{round}.pdf"));
        std::fs::write(&file, &bytes).unwrap();
        let out = edgerag(&["build", path(&file), "-o", path(&bundle), "--strict", "--no-embed"]);
        if out.status.success() {
            assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
            continue;
        }
        let line = one_error_line(&out);
        assert!(line.contains(&format!("corrupt-{round}.pdf")), "{line}");
        parser_gave_up += usize::from(line.contains("gave up"));
    }
    assert_eq!(parser_gave_up, 0, "a corruption reached the parser's panic path");
}
