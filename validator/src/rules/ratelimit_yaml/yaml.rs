//! The YAML document envoyproxy/ratelimit's loader sees. Its decoder, gopkg.in/yaml.v2, is a
//! port of libyaml; parsing with libyaml's own event parser (unsafe-libyaml, which serde_yaml
//! already builds) gives the same structure, the same scalar text, tags and styles, and the same
//! syntax errors. serde_yaml's values cannot stand in: they refuse duplicate keys (yaml.v2 keeps
//! the last), read YAML 1.2 scalars (yaml.v2 reads `yes` as true and `0755` as octal) and lose
//! a scalar's text (`0x10` becomes 16, where yaml.v2 puts `0x10` in a text field).
//!
//! Like yaml.v2's `Unmarshal`, only the first document is read.

use std::collections::HashMap;
use std::ffi::CStr;
use std::mem::MaybeUninit;

/// A node's index in [`Doc::nodes`].
pub type NodeId = usize;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `tag` is the resolved tag (`tag:yaml.org,2002:int`, `!custom`), empty when none was
    /// written; `implicit` is libyaml's `plain_implicit`: a plain scalar without a tag, the only
    /// kind yaml.v2 types by its text.
    Scalar {
        value: String,
        tag: String,
        implicit: bool,
    },
    Sequence(Vec<NodeId>),
    /// Key and value pairs in document order, duplicates kept.
    Mapping(Vec<(NodeId, NodeId)>),
    /// `*name`: the node anchored `&name` most recently before it.
    Alias {
        name: String,
        target: NodeId,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub kind: Kind,
    /// Zero-based, as libyaml counts; messages add one.
    pub line: usize,
}

/// The first document of a stream: `root` is `None` for an empty stream (only comments or
/// nothing), which yaml.v2 decodes as an empty map.
#[derive(Debug, Default)]
pub struct Doc {
    pub nodes: Vec<Node>,
    pub root: Option<NodeId>,
}

impl Doc {
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id]
    }
}

/// Parses the first document, or fails with yaml.v2's message (`yaml: line 2: found unexpected
/// end of stream`).
pub fn parse(text: &str) -> Result<Doc, String> {
    let mut parser = Parser::new(text.as_bytes())?;
    let mut builder = Builder::default();
    loop {
        let event = parser.next()?;
        if builder.push(event)? {
            return Ok(builder.doc);
        }
    }
}

/// One parser event, copied out of libyaml's buffers.
enum Event {
    StreamStart,
    StreamEnd,
    DocumentStart,
    DocumentEnd,
    Alias {
        anchor: String,
        line: usize,
    },
    Scalar {
        anchor: Option<String>,
        tag: String,
        value: String,
        implicit: bool,
        line: usize,
    },
    SequenceStart {
        anchor: Option<String>,
        line: usize,
    },
    SequenceEnd,
    MappingStart {
        anchor: Option<String>,
        line: usize,
    },
    MappingEnd,
}

/// libyaml's parser over a borrowed input. Boxed: libyaml keeps a pointer to the parser itself
/// (its read handler's data), so it must not move once the input is set.
struct Parser<'input> {
    sys: Box<MaybeUninit<unsafe_libyaml::yaml_parser_t>>,
    _input: &'input [u8],
}

impl<'input> Parser<'input> {
    fn new(input: &'input [u8]) -> Result<Parser<'input>, String> {
        let mut sys = Box::new(MaybeUninit::<unsafe_libyaml::yaml_parser_t>::uninit());
        // SAFETY: `yaml_parser_initialize` fully initialises the zeroed parser; the input slice
        // outlives the parser (the lifetime on `Parser`), and the box keeps the parser in place.
        unsafe {
            let p = sys.as_mut_ptr();
            if unsafe_libyaml::yaml_parser_initialize(p).fail {
                return Err("yaml: cannot initialise the parser".into());
            }
            unsafe_libyaml::yaml_parser_set_encoding(p, unsafe_libyaml::YAML_UTF8_ENCODING);
            unsafe_libyaml::yaml_parser_set_input_string(p, input.as_ptr(), input.len() as u64);
        }
        Ok(Parser { sys, _input: input })
    }

    fn next(&mut self) -> Result<Event, String> {
        let p = self.sys.as_mut_ptr();
        let mut raw = MaybeUninit::<unsafe_libyaml::yaml_event_t>::uninit();
        // SAFETY: the parser was initialised in `new`; a successful `yaml_parser_parse` fills the
        // event, whose strings are copied before `yaml_event_delete` frees them.
        unsafe {
            if unsafe_libyaml::yaml_parser_parse(p, raw.as_mut_ptr()).fail {
                return Err(failure(&*p));
            }
            let event = raw.as_mut_ptr();
            let copied = copy_event(&*event);
            unsafe_libyaml::yaml_event_delete(event);
            Ok(copied)
        }
    }
}

impl Drop for Parser<'_> {
    fn drop(&mut self) {
        // SAFETY: initialised in `new` (a failed initialisation never builds a `Parser`).
        unsafe { unsafe_libyaml::yaml_parser_delete(self.sys.as_mut_ptr()) }
    }
}

/// yaml.v2's wording of a parse failure (`parser.fail` in its decode.go): the problem, with the
/// problem's line (one more for a scanner error, which stops before counting its line) or else
/// the context's.
fn failure(p: &unsafe_libyaml::yaml_parser_t) -> String {
    let mut line = 0;
    if p.problem_mark.line != 0 {
        line = p.problem_mark.line;
        if p.error == unsafe_libyaml::YAML_SCANNER_ERROR {
            line += 1;
        }
    } else if p.context_mark.line != 0 {
        line = p.context_mark.line;
    }
    let problem = if p.problem.is_null() {
        String::new()
    } else {
        // SAFETY: libyaml's problem texts are static NUL-terminated strings.
        unsafe { CStr::from_ptr(p.problem) }
            .to_string_lossy()
            .into_owned()
    };
    let problem = if problem.is_empty() {
        "unknown problem parsing YAML content".to_string()
    } else {
        problem
    };
    if line == 0 {
        format!("yaml: {problem}")
    } else {
        format!("yaml: line {line}: {problem}")
    }
}

/// # Safety
/// `ptr` is null or a NUL-terminated string owned by a live event.
unsafe fn text(ptr: *const u8) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: as the function's contract says.
    Some(
        unsafe { CStr::from_ptr(ptr.cast()) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// # Safety
/// `e` is an event a successful `yaml_parser_parse` filled, not yet deleted.
unsafe fn copy_event(e: &unsafe_libyaml::yaml_event_t) -> Event {
    let line = e.start_mark.line as usize;
    // SAFETY: each arm reads the union member its event type defines.
    unsafe {
        match e.type_ {
            unsafe_libyaml::YAML_STREAM_START_EVENT => Event::StreamStart,
            unsafe_libyaml::YAML_DOCUMENT_START_EVENT => Event::DocumentStart,
            unsafe_libyaml::YAML_DOCUMENT_END_EVENT => Event::DocumentEnd,
            unsafe_libyaml::YAML_ALIAS_EVENT => Event::Alias {
                anchor: text(e.data.alias.anchor).unwrap_or_default(),
                line,
            },
            unsafe_libyaml::YAML_SCALAR_EVENT => {
                let s = e.data.scalar;
                let bytes = std::slice::from_raw_parts(s.value, s.length as usize);
                Event::Scalar {
                    anchor: text(s.anchor),
                    tag: text(s.tag).unwrap_or_default(),
                    value: String::from_utf8_lossy(bytes).into_owned(),
                    implicit: s.plain_implicit,
                    line,
                }
            }
            unsafe_libyaml::YAML_SEQUENCE_START_EVENT => Event::SequenceStart {
                anchor: text(e.data.sequence_start.anchor),
                line,
            },
            unsafe_libyaml::YAML_SEQUENCE_END_EVENT => Event::SequenceEnd,
            unsafe_libyaml::YAML_MAPPING_START_EVENT => Event::MappingStart {
                anchor: text(e.data.mapping_start.anchor),
                line,
            },
            unsafe_libyaml::YAML_MAPPING_END_EVENT => Event::MappingEnd,
            // Stream end, and "no event", which a successful parse never returns.
            _ => Event::StreamEnd,
        }
    }
}

/// Builds the node tree from events, as yaml.v2's parser does: an anchor names its node from
/// the node's start (so an alias inside it refers to it), a later anchor of the same name wins.
#[derive(Default)]
struct Builder {
    doc: Doc,
    anchors: HashMap<String, NodeId>,
    /// Open collections, innermost last.
    open: Vec<NodeId>,
}

impl Builder {
    /// Takes one event; `true` once the first document (or an empty stream) is complete.
    fn push(&mut self, event: Event) -> Result<bool, String> {
        match event {
            Event::StreamStart | Event::DocumentStart => Ok(false),
            Event::StreamEnd | Event::DocumentEnd => Ok(true),
            Event::Alias { anchor, line } => {
                let Some(&target) = self.anchors.get(&anchor) else {
                    return Err(format!("yaml: unknown anchor '{anchor}' referenced"));
                };
                self.add(
                    Kind::Alias {
                        name: anchor,
                        target,
                    },
                    line,
                    None,
                );
                Ok(false)
            }
            Event::Scalar {
                anchor,
                tag,
                value,
                implicit,
                line,
            } => {
                self.add(
                    Kind::Scalar {
                        value,
                        tag,
                        implicit,
                    },
                    line,
                    anchor,
                );
                Ok(false)
            }
            Event::SequenceStart { anchor, line } => {
                let id = self.add(Kind::Sequence(Vec::new()), line, anchor);
                self.open.push(id);
                Ok(false)
            }
            Event::MappingStart { anchor, line } => {
                let id = self.add(Kind::Mapping(Vec::new()), line, anchor);
                self.open.push(id);
                Ok(false)
            }
            Event::SequenceEnd | Event::MappingEnd => {
                self.open.pop();
                Ok(false)
            }
        }
    }

    fn add(&mut self, kind: Kind, line: usize, anchor: Option<String>) -> NodeId {
        let id = self.doc.nodes.len();
        self.doc.nodes.push(Node { kind, line });
        if let Some(anchor) = anchor {
            self.anchors.insert(anchor, id);
        }
        match self.open.last().copied() {
            None => self.doc.root = Some(id),
            Some(parent) => match &mut self.doc.nodes[parent].kind {
                Kind::Sequence(items) => items.push(id),
                Kind::Mapping(pairs) => match pairs.last_mut() {
                    // A key waits for its value: usize::MAX marks the gap.
                    Some(pair) if pair.1 == usize::MAX => pair.1 = id,
                    _ => pairs.push((id, usize::MAX)),
                },
                _ => {}
            },
        }
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(doc: &Doc, id: NodeId) -> (&str, &str, bool) {
        match &doc.node(id).kind {
            Kind::Scalar {
                value,
                tag,
                implicit,
            } => (value, tag, *implicit),
            other => panic!("not a scalar: {other:?}"),
        }
    }

    #[test]
    fn keeps_duplicate_keys_text_tags_and_styles() {
        let doc = parse("a: 0x10\na: 'yes'\nb: !!str 5\n").expect("parses");
        let Kind::Mapping(pairs) = &doc.node(doc.root.expect("root")).kind else {
            panic!("root is not a map");
        };
        assert_eq!(pairs.len(), 3);
        assert_eq!(scalar(&doc, pairs[0].1), ("0x10", "", true));
        assert_eq!(scalar(&doc, pairs[1].1), ("yes", "", false));
        assert_eq!(
            scalar(&doc, pairs[2].1),
            ("5", "tag:yaml.org,2002:str", false)
        );
        assert_eq!(doc.node(pairs[1].0).line, 1);
    }

    #[test]
    fn aliases_point_at_their_anchor() {
        let doc = parse("x: &v [1]\ny: *v\n").expect("parses");
        let Kind::Mapping(pairs) = &doc.node(doc.root.expect("root")).kind else {
            panic!("root is not a map");
        };
        assert_eq!(
            doc.node(pairs[1].1).kind,
            Kind::Alias {
                name: "v".into(),
                target: pairs[0].1
            }
        );
        assert_eq!(
            parse("y: *nope\n").map(|_| ()),
            Err("yaml: unknown anchor 'nope' referenced".into())
        );
    }

    #[test]
    fn only_the_first_document_and_an_empty_stream() {
        let doc = parse("a: 1\n---\n[unclosed\n").expect("the second document is not read");
        assert!(doc.root.is_some());
        assert!(parse("# nothing\n").expect("parses").root.is_none());
    }

    #[test]
    fn syntax_errors_read_as_yaml_v2_words_them() {
        assert_eq!(
            parse("'''\n").map(|_| ()),
            Err("yaml: line 2: found unexpected end of stream".into())
        );
    }
}
