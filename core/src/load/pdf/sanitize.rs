//! The document handed to pdf-extract, rebuilt from the parsed one so that its interpreter
//! meets nothing it would panic on, recurse on without end, or inflate without a bound.
//!
//! - The page tree is walked here, iteratively, from the catalog's `/Pages` down the `Kids`
//!   (a tree node or `Kids` array met again is skipped, so cycles end and shared subtrees do
//!   not multiply; deeper than [`limits::MAX_DEPTH`] is refused, and so are more pages than
//!   the work budget allows at a nominal cost each); `Resources` and `MediaBox` are inherited
//!   on the way down. The file's `/Parent` links are never followed (not here, and not by
//!   pdf-extract, which only sees the new tree), so a broken one costs nothing. The new tree
//!   is flat: one node without a `/Parent`, whose kids carry their own `MediaBox`,
//!   `Resources` and one content stream (pdf-extract looks inherited attributes up through
//!   `/Parent` only when a page lacks them).
//! - Every stream pdf-extract reads (contents, forms, CMaps) is decoded here under the
//!   inflate budget and stored unfiltered; images and font programs are left out.
//! - Content streams are rewritten by [`super::content`]; fonts by [`super::fonts`].
//! - Form XObjects become one form per (form, resources) pair with its resources explicit; a
//!   form that would draw itself loses that `Do`; forms nest at most
//!   [`limits::MAX_PDF_FORM_DEPTH`] deep.
//! - What pdf-extract will then do is counted (content bytes, a form each time it is drawn,
//!   each font on each page that uses it, each byte shown times the font's per-byte cost) and
//!   refused past [`limits::pdf_work_budget`]. A font's cost (its rewritten CMaps and tables)
//!   is taken as soon as it is built, as the first page that uses it would take it, so
//!   building fonts stops as soon as their costs pass the budget. The memory its width table
//!   and `ToUnicode` map take ([`fonts::Font::memory`], held in the rebuilt document and by
//!   pdf-extract on each page that uses the font) is taken once, from its own budget:
//!   all fonts together stay under [`limits::MAX_PDF_FONT_MEMORY`].

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::rc::Rc;

use pdf_extract::{Dictionary, Document, Object, ObjectId, Stream};

use super::content::{self, Resolve};
use super::decode::{self, Budget, Decoded};
use super::fonts::{self, deref};
use crate::{Error, Result, limits};

/// Page size when no valid `MediaBox` is found (US Letter, as PDF readers assume).
const DEFAULT_MEDIA_BOX: [f64; 4] = [0.0, 0.0, 612.0, 792.0];

/// pdf-extract's work for a page besides its content: the page's dictionaries, its media box
/// and resources looked up, its fonts built, its output begun and ended. It also bounds the
/// number of pages (by [`limits::pdf_work_budget`] over it).
const PAGE_COST: usize = 4096;

/// A font added to the new document.
#[derive(Clone, Copy)]
struct FontEntry {
    index: usize,
    id: ObjectId,
    cost: usize,
    cost_per_byte: usize,
}

/// A form added to the new document.
#[derive(Clone)]
struct FormEntry {
    index: usize,
    id: ObjectId,
    /// pdf-extract's work for one drawing of it (forms it draws included).
    cost: usize,
    /// Fonts it uses, itself or through the forms it draws.
    fonts: Rc<BTreeSet<usize>>,
}

/// Identity of a font or resource dictionary: its object id, or its address when direct.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Id(ObjectId),
    Direct(usize),
}

fn key_of(object: &Object, resolved: &Object) -> Key {
    match object {
        Object::Reference(id) => Key::Id(*id),
        _ => Key::Direct(std::ptr::from_ref(resolved) as usize),
    }
}

/// A rewritten page content: its object, pdf-extract's work for it, its resources.
type PageContent = (ObjectId, usize, Dictionary);

struct Sanitizer<'a> {
    src: &'a Document,
    /// Rewritten contents by (contents, resources): pages that share them share the result.
    page_contents: HashMap<(Key, usize), PageContent>,
    budget: &'a mut Budget,
    /// pdf-extract's work, counted against [`limits::pdf_work_budget`].
    work: Budget,
    /// Work taken for fonts as they were built, since the last page was counted: that page
    /// (the first to use them) takes it from its own cost.
    prepaid: usize,
    /// The memory the fonts built so far take ([`fonts::Font::memory`]).
    font_memory: usize,
    out: Document,
    fonts: HashMap<Key, Option<FontEntry>>,
    font_list: Vec<FontEntry>,
    forms: HashMap<(ObjectId, usize), Option<FormEntry>>,
    form_stack: Vec<(ObjectId, usize)>,
    form_count: usize,
}

/// The new document and its number of pages.
pub(super) struct Sanitized {
    pub(super) doc: Document,
    pub(super) pages: usize,
}

/// Builds the document for pdf-extract from `src` (see the module docs).
///
/// # Errors
/// [`Error::Pdf`] without a page tree; [`Error::Limit`] for a limit passed.
pub(super) fn sanitize(
    src: &Document,
    budget: &mut Budget,
    source_len: usize,
) -> Result<Sanitized> {
    let work = Budget::work_for_source(source_len);
    let pages = page_list(src, work.limit())?;
    let mut s = Sanitizer {
        src,
        page_contents: HashMap::new(),
        budget,
        work,
        prepaid: 0,
        font_memory: 0,
        out: Document::with_version("1.5"),
        fonts: HashMap::new(),
        font_list: Vec::new(),
        forms: HashMap::new(),
        form_stack: Vec::new(),
        form_count: 0,
    };
    let tree_id = s.out.new_object_id();
    let mut kids = Vec::with_capacity(pages.len());
    for page in &pages {
        kids.push(Object::Reference(s.page(page, tree_id)?));
    }
    let count = kids.len();
    let mut tree = Dictionary::new();
    tree.set("Type", Object::Name(b"Pages".to_vec()));
    tree.set("Count", count as i64);
    tree.set("Kids", kids);
    s.out.objects.insert(tree_id, Object::Dictionary(tree));
    let mut catalog = Dictionary::new();
    catalog.set("Type", Object::Name(b"Catalog".to_vec()));
    catalog.set("Pages", Object::Reference(tree_id));
    let catalog_id = s.out.add_object(Object::Dictionary(catalog));
    s.out.trailer.set("Root", Object::Reference(catalog_id));
    Ok(Sanitized { doc: s.out, pages: count })
}

/// A page with what it inherits.
struct Page<'a> {
    dict: &'a Dictionary,
    resources: Option<&'a Dictionary>,
    media_box: Option<&'a Object>,
}

/// A tree node whose kids are being walked, with what they inherit.
struct Frame<'a> {
    kids: std::slice::Iter<'a, Object>,
    resources: Option<&'a Dictionary>,
    media_box: Option<&'a Object>,
}

/// The pages in order, walking `Kids` from the catalog (see the module docs); more than
/// `work_limit` / [`PAGE_COST`] is refused as too much work.
fn page_list(doc: &Document, work_limit: usize) -> Result<Vec<Page<'_>>> {
    let no_tree = || Error::Pdf("no page tree (the catalog has no /Pages)".to_owned());
    let catalog = doc.trailer.get(b"Root").ok().and_then(|r| deref(doc, r)).ok_or_else(no_tree)?;
    let root = catalog.as_dict().ok().and_then(|c| c.get(b"Pages").ok()).ok_or_else(no_tree)?;
    let mut pages = Vec::new();
    // Tree nodes and `Kids` arrays walked, by address: each is walked once, however many
    // nodes list it (a cycle ends; shared subtrees cannot multiply the pages).
    let mut seen_nodes: HashSet<*const Object> = HashSet::new();
    let mut seen_kids: HashSet<*const Vec<Object>> = HashSet::new();
    let mut stack =
        vec![Frame { kids: std::slice::from_ref(root).iter(), resources: None, media_box: None }];
    while let Some(frame) = stack.last_mut() {
        let Some(node) = frame.kids.next() else {
            stack.pop();
            continue;
        };
        let Some(resolved @ Object::Dictionary(dict)) = deref(doc, node) else { continue };
        let own_resources =
            dict.get(b"Resources").ok().and_then(|r| deref(doc, r)).and_then(|r| r.as_dict().ok());
        let resources = own_resources.or(frame.resources);
        let media_box = dict.get(b"MediaBox").ok().or(frame.media_box);
        let kids =
            dict.get(b"Kids").ok().and_then(|k| deref(doc, k)).and_then(|k| k.as_array().ok());
        let is_tree = match dict.get(b"Type") {
            Ok(Object::Name(t)) => t == b"Pages",
            _ => kids.is_some(),
        };
        if !is_tree {
            if pages.len() >= work_limit / PAGE_COST {
                return Err(limits::pdf_work_exceeded(work_limit));
            }
            pages.push(Page { dict, resources, media_box });
            continue;
        }
        if !seen_nodes.insert(resolved) || kids.is_some_and(|k| !seen_kids.insert(k)) {
            continue; // A cycle, or a node or `Kids` listed twice.
        }
        // The root is at depth 0.
        if stack.len() > limits::MAX_DEPTH {
            return Err(limits::too_deep("the PDF page tree"));
        }
        let kids = kids.map(Vec::as_slice).unwrap_or_default();
        stack.push(Frame { kids: kids.iter(), resources, media_box });
    }
    if pages.is_empty() {
        return Err(Error::Pdf("the document has no pages".to_owned()));
    }
    Ok(pages)
}

/// Four numbers under 10^9 in size, or the default page size.
fn media_box(doc: &Document, given: Option<&Object>) -> Vec<Object> {
    let number = |o: &Object| fonts::number(doc, o).filter(|v| v.abs() < 1e9);
    let values = match given.and_then(|m| deref(doc, m)).and_then(|m| m.as_array().ok()) {
        Some(items) if items.len() == 4 => {
            let mut values = [0.0; 4];
            let all =
                values.iter_mut().zip(items).all(|(v, i)| number(i).map(|n| *v = n).is_some());
            if all { values } else { DEFAULT_MEDIA_BOX }
        }
        _ => DEFAULT_MEDIA_BOX,
    };
    values.into_iter().map(|v| Object::Real(v as f32)).collect()
}

/// What one content stream uses, gathered while it is rewritten.
struct Scope<'s, 'a> {
    s: &'s mut Sanitizer<'a>,
    resources: Option<&'a Dictionary>,
    fonts: BTreeMap<usize, ObjectId>,
    forms: BTreeMap<usize, ObjectId>,
    /// Fonts used, directly or through forms.
    all_fonts: BTreeSet<usize>,
    /// pdf-extract's work for the forms drawn and the text shown.
    cost: usize,
}

impl<'s, 'a> Scope<'s, 'a> {
    fn new(s: &'s mut Sanitizer<'a>, resources: Option<&'a Dictionary>) -> Self {
        Self {
            s,
            resources,
            fonts: BTreeMap::new(),
            forms: BTreeMap::new(),
            all_fonts: BTreeSet::new(),
            cost: 0,
        }
    }

    /// The entry `name` of the resource category `category`, with its key.
    fn resource(&self, category: &[u8], name: &[u8]) -> Option<(&'a Object, &'a Object)> {
        let doc = self.s.src;
        let dict =
            self.resources?.get(category).ok().and_then(|d| deref(doc, d))?.as_dict().ok()?;
        let entry = dict.get(name).ok()?;
        Some((entry, deref(doc, entry)?))
    }

    /// The resource dictionary pdf-extract gets for this stream.
    fn resource_dict(&self) -> Dictionary {
        let names = |prefix: &str, items: &BTreeMap<usize, ObjectId>| -> Dictionary {
            items.iter().map(|(i, id)| (format!("{prefix}{i}"), Object::Reference(*id))).collect()
        };
        let mut dict = Dictionary::new();
        dict.set("Font", Object::Dictionary(names("F", &self.fonts)));
        dict.set("XObject", Object::Dictionary(names("X", &self.forms)));
        dict
    }

    /// The work of the fonts used, built once on each page.
    fn font_cost(&self) -> usize {
        let list = &self.s.font_list;
        self.all_fonts
            .iter()
            .filter_map(|&i| list.get(i))
            .fold(0usize, |acc, f| acc.saturating_add(f.cost))
    }
}

impl Resolve for Scope<'_, '_> {
    fn font(&mut self, name: &[u8]) -> Result<Option<usize>> {
        let Some((entry, font)) = self.resource(b"Font", name) else { return Ok(None) };
        let Some(f) = self.s.font(key_of(entry, font), font)? else { return Ok(None) };
        self.fonts.insert(f.index, f.id);
        self.all_fonts.insert(f.index);
        Ok(Some(f.index))
    }

    fn form(&mut self, name: &[u8]) -> Result<Option<usize>> {
        let Some((Object::Reference(id), _)) = self.resource(b"XObject", name) else {
            return Ok(None);
        };
        let Some(form) = self.s.form(*id, self.resources)? else { return Ok(None) };
        self.cost = self.cost.saturating_add(form.cost);
        if self.forms.insert(form.index, form.id).is_none() {
            self.all_fonts.extend(form.fonts.iter().copied());
        }
        Ok(Some(form.index))
    }

    fn shown(&mut self, font: usize, len: usize) -> Result<()> {
        let per_byte = self.s.font_list.get(font).map_or(1, |f| f.cost_per_byte);
        self.cost = self.cost.saturating_add(len.saturating_mul(per_byte));
        Ok(())
    }
}

impl<'a> Sanitizer<'a> {
    /// Decodes a content stream (or array of them), joined by newlines.
    fn contents(&mut self, contents: Option<&'a Object>) -> Result<Vec<u8>> {
        let doc = self.src;
        let streams: Vec<&Object> = match contents.and_then(|c| deref(doc, c)) {
            Some(Object::Array(items)) => items.iter().collect(),
            Some(other) => vec![other],
            None => Vec::new(),
        };
        let mut out = Vec::new();
        for stream in streams {
            if let Some(Object::Stream(s)) = deref(doc, stream)
                && let Decoded::Bytes(data) = decode::decode(&s.dict, &s.content, self.budget)?
            {
                out.extend_from_slice(&data);
                out.push(b'\n');
            }
        }
        Ok(out)
    }

    /// The rewritten content of a page (shared by the pages with the same contents and
    /// resources).
    fn page_content(&mut self, page: &Page<'a>) -> Result<PageContent> {
        let given = page.dict.get(b"Contents").ok();
        let key = given.and_then(|c| Some(key_of(c, deref(self.src, c)?)));
        let resources = page.resources.map_or(0, |r| std::ptr::from_ref(r) as usize);
        if let Some(done) = key.and_then(|k| self.page_contents.get(&(k, resources))) {
            return Ok(done.clone());
        }
        let content = self.contents(given)?;
        let mut scope = Scope::new(self, page.resources);
        let rewritten = content::rewrite(&content, &mut scope)?;
        drop(content);
        let cost = scope.cost.saturating_add(scope.font_cost()).saturating_add(rewritten.len());
        let dict = scope.resource_dict();
        let id = self.out.add_object(Object::Stream(Stream::new(Dictionary::new(), rewritten)));
        let done = (id, cost, dict);
        if let Some(k) = key {
            self.page_contents.insert((k, resources), done.clone());
        }
        Ok(done)
    }

    /// Adds one page under `parent`.
    fn page(&mut self, page: &Page<'a>, parent: ObjectId) -> Result<ObjectId> {
        let (contents, cost, resources) = self.page_content(page)?;
        // pdf-extract interprets a shared content again on every page. The fonts built for
        // this page are in its cost, and were taken already.
        let prepaid = std::mem::take(&mut self.prepaid);
        self.work.take(cost.saturating_add(PAGE_COST).saturating_sub(prepaid))?;
        let mut dict = Dictionary::new();
        dict.set("Type", Object::Name(b"Page".to_vec()));
        dict.set("Parent", Object::Reference(parent));
        dict.set("MediaBox", media_box(self.src, page.media_box));
        dict.set("Resources", Object::Dictionary(resources));
        dict.set("Contents", Object::Reference(contents));
        Ok(self.out.add_object(Object::Dictionary(dict)))
    }

    /// The sanitized font for `font` (memoised by `key`). Its cost and its memory are taken
    /// as soon as it is built, before it is kept or another font is built: a content stream
    /// selecting thousands of fonts is refused once their rewritten CMaps and tables pass the
    /// budgets, not after all of them are held. The memory is taken once, from
    /// [`limits::MAX_PDF_FONT_MEMORY`]; the cost from the work budget, again by every page that
    /// uses the font, the first one excepted.
    fn font(&mut self, key: Key, font: &'a Object) -> Result<Option<FontEntry>> {
        if let Some(entry) = self.fonts.get(&key) {
            return Ok(*entry);
        }
        let entry = match fonts::sanitize(self.src, font, self.budget)? {
            None => None,
            Some(mut f) => {
                self.work.take(f.cost)?;
                self.font_memory = self.font_memory.saturating_add(f.memory);
                if self.font_memory > limits::MAX_PDF_FONT_MEMORY {
                    return Err(limits::pdf_font_memory_exceeded());
                }
                self.prepaid = self.prepaid.saturating_add(f.cost);
                for (name, stream) in f.streams {
                    let id = self.out.add_object(Object::Stream(stream));
                    f.dict.set(name, Object::Reference(id));
                }
                let id = self.out.add_object(Object::Dictionary(f.dict));
                let entry = FontEntry {
                    index: self.font_list.len(),
                    id,
                    cost: f.cost,
                    cost_per_byte: f.cost_per_byte,
                };
                self.font_list.push(entry);
                Some(entry)
            }
        };
        self.fonts.insert(key, entry);
        Ok(entry)
    }

    /// The sanitized form `id` drawn with `inherited` resources (memoised per pair); `None`
    /// for anything but a form, and for a form drawing itself.
    fn form(
        &mut self,
        id: ObjectId,
        inherited: Option<&'a Dictionary>,
    ) -> Result<Option<FormEntry>> {
        let doc = self.src;
        let Ok(Object::Stream(stream)) = doc.get_object(id) else { return Ok(None) };
        if !matches!(stream.dict.get(b"Subtype"), Ok(Object::Name(n)) if n == b"Form") {
            return Ok(None); // An image (or PostScript): no text.
        }
        let own = stream
            .dict
            .get(b"Resources")
            .ok()
            .and_then(|r| deref(doc, r))
            .and_then(|r| r.as_dict().ok());
        let resources = own.or(inherited);
        let key = (id, resources.map_or(0, |r| std::ptr::from_ref(r) as usize));
        if self.form_stack.contains(&key) {
            return Ok(None);
        }
        if let Some(entry) = self.forms.get(&key) {
            return Ok(entry.clone());
        }
        if self.form_stack.len() >= limits::MAX_PDF_FORM_DEPTH {
            return Err(Error::Limit(format!(
                "PDF forms drawn inside forms more than {} levels deep",
                limits::MAX_PDF_FORM_DEPTH
            )));
        }
        let Decoded::Bytes(content) = decode::decode(&stream.dict, &stream.content, self.budget)?
        else {
            self.forms.insert(key, None);
            return Ok(None);
        };
        self.form_stack.push(key);
        let mut scope = Scope::new(self, resources);
        let rewritten = content::rewrite(&content, &mut scope);
        let rewritten = match rewritten {
            Ok(r) => r,
            Err(e) => {
                self.form_stack.pop();
                return Err(e);
            }
        };
        let cost = scope.cost.saturating_add(rewritten.len());
        let fonts = Rc::new(std::mem::take(&mut scope.all_fonts));
        let mut dict = Dictionary::new();
        dict.set("Type", Object::Name(b"XObject".to_vec()));
        dict.set("Subtype", Object::Name(b"Form".to_vec()));
        dict.set("Resources", Object::Dictionary(scope.resource_dict()));
        self.form_stack.pop();
        let new_id = self.out.add_object(Object::Stream(Stream::new(dict, rewritten)));
        let entry = FormEntry { index: self.form_count, id: new_id, cost, fonts };
        self.form_count += 1;
        self.forms.insert(key, Some(entry.clone()));
        Ok(Some(entry))
    }
}
