//! envoyproxy/ratelimit's two passes over a rules file (`ConfigFileContentToYaml` in its
//! config_impl.go), each as gopkg.in/yaml.v2 decodes:
//!
//! 1. into a generic map, whose every key must be a string from the loader's list of known
//!    keys (at any depth: the list is flat), whose lists hold maps only, and whose leaves are
//!    strings, integers that fit int64, booleans or null (a float, or an integer from 2^63, is
//!    "error checking config");
//! 2. into its typed structs (`YamlRoot`, `YamlDescriptor`, `YamlRateLimit`): a list or map
//!    where text is due, text where a list, map, number or boolean is due, or a number that
//!    does not fit uint32 is an unmarshal error. Keys that are known but not fields of the
//!    struct at hand are ignored, duplicate keys keep the last value.
//!
//! Either pass failing refuses the file. What passes is what the service's loader then reads.
//! Alongside, the decoder notes what the gateway's renderer never writes (a tag, an alias, a
//! merge, a duplicate key, a key it never writes, a key the service ignores where it stands):
//! layer 1 refuses those by name. A scalar in a text field is read as its text (`value: yes`
//! is "yes"), as the renderer means it, so it is not noted.

use super::resolve::{self, short_tag, Scalar};
use super::yaml::{self, Doc, Kind, NodeId};

/// Every key the loader knows (`validKeys`), at any depth.
pub const KNOWN_KEYS: &[&str] = &[
    "domain",
    "key",
    "value",
    "descriptors",
    "rate_limit",
    "unit",
    "requests_per_unit",
    "unlimited",
    "shadow_mode",
    "quota_mode",
    "name",
    "replaces",
    "detailed_metric",
    "value_to_metric",
    "share_threshold",
];

/// The keys the gateway's renderer writes (`render/src/ratelimit.rs`).
const RENDERED_KEYS: &[&str] = &[
    "domain",
    "descriptors",
    "key",
    "value",
    "rate_limit",
    "unit",
    "requests_per_unit",
];

/// Where a struct's keys stand, for a note.
fn place(into: &str) -> &'static str {
    match into {
        "config.YamlRoot" => "the top level",
        "config.YamlDescriptor" => "a descriptor",
        "config.YamlRateLimit" => "a rate_limit",
        _ => "a replaces entry",
    }
}

/// `YamlRoot`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct YamlRoot {
    pub domain: String,
    pub descriptors: Vec<YamlDescriptor>,
}

/// `YamlDescriptor`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct YamlDescriptor {
    pub key: String,
    pub value: String,
    pub rate_limit: Option<YamlRateLimit>,
    pub descriptors: Vec<YamlDescriptor>,
    pub shadow_mode: bool,
    pub quota_mode: bool,
    pub detailed_metric: bool,
    pub value_to_metric: bool,
    pub share_threshold: bool,
}

/// `YamlRateLimit`; `replaces` holds the names of its `replaces` entries.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct YamlRateLimit {
    pub requests_per_unit: u32,
    pub unit: String,
    pub unlimited: bool,
    pub name: String,
    pub replaces: Vec<String>,
}

/// Something the service accepts that the gateway's renderer never writes, and where (`line N`
/// or a rule's path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub at: String,
    pub what: String,
}

#[derive(Debug)]
pub struct Decoded {
    pub root: YamlRoot,
    pub notes: Vec<Note>,
}

/// One reason the service refuses the file, and where in it (`document.descriptors[0]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub at: String,
    pub reason: String,
}

impl Refused {
    fn at(at: &str, reason: impl Into<String>) -> Refused {
        Refused {
            at: at.to_string(),
            reason: reason.into(),
        }
    }
}

/// Both passes: the typed root, or the service's reasons (without its `FILE: ` prefix), in
/// document order. Go stops at the first; which one that is depends on its map order, so every
/// reason of the failing pass is given.
pub fn decode(text: &str) -> Result<Decoded, Vec<Refused>> {
    let loading = |e: String| {
        vec![Refused::at(
            "document",
            format!("error loading config file: {e}"),
        )]
    };
    let doc = yaml::parse(text).map_err(loading)?;
    let generic = Generic::new(&doc).root().map_err(loading)?;
    let mut reasons = Vec::new();
    if let G::Map(pairs) = &generic {
        check_keys(pairs, "document", &mut reasons);
    }
    if !reasons.is_empty() {
        return Err(reasons);
    }
    let mut typed = Typed::new(&doc);
    let root = typed.root().map_err(loading)?;
    if !typed.terrors.is_empty() {
        return Err(loading(format!(
            "yaml: unmarshal errors:\n  {}",
            typed.terrors.join("\n  ")
        )));
    }
    Ok(Decoded {
        root,
        notes: typed.notes,
    })
}

/// A value as yaml.v2 decodes it into an `interface{}` (timestamps stay text).
#[derive(Debug, Clone, PartialEq)]
enum G {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
    Seq(Vec<G>),
    /// A Go map: one entry per distinct key, the last value written wins.
    Map(Vec<(G, G)>),
}

const WANT_MAP: &str = "yaml: map merge requires map or sequence of maps as the value";

fn is_merge(doc: &Doc, id: NodeId) -> bool {
    matches!(&doc.node(id).kind, Kind::Scalar { value, tag, implicit }
        if value == "<<" && (*implicit || tag == resolve::MERGE))
}

/// yaml.v2's `prepare`: a null that leaves the target untouched (a pointer stays nil). `Null`
/// and `NULL` are not in this list: they allocate the pointer, then zero what it points at.
fn prepared_null(doc: &Doc, id: NodeId) -> bool {
    match &doc.node(id).kind {
        Kind::Scalar {
            value,
            tag,
            implicit,
        } => {
            tag == resolve::NULL
                || tag.is_empty()
                    && (value == "null" || value == "~" || value.is_empty() && *implicit)
        }
        _ => false,
    }
}

/// Pass 1's decoder: the document into `map[interface{}]interface{}`.
struct Generic<'d> {
    doc: &'d Doc,
    /// Aliases being expanded, to refuse one that contains itself.
    expanding: Vec<NodeId>,
}

impl<'d> Generic<'d> {
    fn new(doc: &'d Doc) -> Self {
        Generic {
            doc,
            expanding: Vec::new(),
        }
    }

    fn root(&mut self) -> Result<G, String> {
        let Some(root) = self.doc.root else {
            return Ok(G::Map(Vec::new()));
        };
        let target = self.deref(root)?;
        let node = self.doc.node(target);
        let into = "map[interface {}]interface {}";
        let unmarshal = |what: String| {
            format!(
                "yaml: unmarshal errors:\n  line {}: cannot unmarshal {what} into {into}",
                node.line + 1
            )
        };
        match &node.kind {
            Kind::Mapping(_) => {
                let mut out = Vec::new();
                self.map_into(target, &mut out)?;
                self.expanding.clear();
                Ok(G::Map(out))
            }
            Kind::Sequence(_) => Err(unmarshal("!!seq".into())),
            Kind::Scalar {
                value,
                tag,
                implicit,
            } => match resolve::scalar(value, tag, *implicit)? {
                (_, Scalar::Null) => Ok(G::Map(Vec::new())),
                (rtag, _) => Err(unmarshal(scalar_shown(value, tag, &rtag))),
            },
            Kind::Alias { .. } => Ok(G::Map(Vec::new())),
        }
    }

    /// Follows an alias chain to the node it names; refuses a cycle.
    fn deref(&mut self, mut id: NodeId) -> Result<NodeId, String> {
        while let Kind::Alias { name, target } = &self.doc.node(id).kind {
            if self.expanding.contains(&id) {
                return Err(format!("yaml: anchor '{name}' value contains itself"));
            }
            self.expanding.push(id);
            id = *target;
        }
        Ok(id)
    }

    fn value(&mut self, id: NodeId) -> Result<G, String> {
        let depth = self.expanding.len();
        let target = self.deref(id)?;
        let out = match &self.doc.node(target).kind {
            Kind::Scalar {
                value,
                tag,
                implicit,
            } => match resolve::scalar(value, tag, *implicit)?.1 {
                Scalar::Null => G::Null,
                Scalar::Bool(b) => G::Bool(b),
                Scalar::Int(i) => G::Int(i),
                Scalar::Uint(u) => G::Uint(u),
                Scalar::Float(f) => G::Float(f),
                Scalar::Str(s) | Scalar::Timestamp(s) => G::Str(s),
            },
            Kind::Sequence(items) => {
                let mut out = Vec::with_capacity(items.len());
                for &item in items {
                    out.push(self.value(item)?);
                }
                G::Seq(out)
            }
            Kind::Mapping(_) => {
                let mut out = Vec::new();
                self.map_into(target, &mut out)?;
                G::Map(out)
            }
            Kind::Alias { .. } => G::Null,
        };
        self.expanding.truncate(depth);
        Ok(out)
    }

    /// A mapping node's pairs into `out`, merges (`<<`) included.
    fn map_into(&mut self, id: NodeId, out: &mut Vec<(G, G)>) -> Result<(), String> {
        let Kind::Mapping(pairs) = &self.doc.node(id).kind else {
            return Err(WANT_MAP.into());
        };
        for &(k, v) in pairs {
            if is_merge(self.doc, k) {
                self.merge_into(v, out)?;
                continue;
            }
            let key = self.value(k)?;
            if matches!(key, G::Seq(_) | G::Map(_)) {
                return Err(format!("yaml: invalid map key: {}", go_v(&key)));
            }
            let value = self.value(v)?;
            match out.iter_mut().find(|(existing, _)| *existing == key) {
                Some(slot) => slot.1 = value,
                None => out.push((key, value)),
            }
        }
        Ok(())
    }

    fn merge_into(&mut self, id: NodeId, out: &mut Vec<(G, G)>) -> Result<(), String> {
        let depth = self.expanding.len();
        let target = self.deref(id)?;
        match &self.doc.node(target).kind {
            Kind::Mapping(_) => self.map_into(target, out)?,
            Kind::Sequence(items) if !matches!(self.doc.node(id).kind, Kind::Alias { .. }) => {
                // Earlier maps take precedence: yaml.v2 merges them last.
                for &item in items.iter().rev() {
                    let inner = self.deref(item)?;
                    self.map_into(inner, out)?;
                }
            }
            _ => return Err(WANT_MAP.into()),
        }
        self.expanding.truncate(depth);
        Ok(())
    }
}

/// yaml.v2's `terror` rendering of a scalar: its tag (the explicit one if written) and its
/// text, cut to seven bytes past ten.
fn scalar_shown(value: &str, tag: &str, rtag: &str) -> String {
    let tag = if tag.is_empty() { rtag } else { tag };
    let shown = if value.len() > 10 {
        let mut end = 7;
        while !value.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &value[..end])
    } else {
        value.to_string()
    };
    format!("{} `{shown}`", short_tag(tag))
}

/// `validateYamlKeys`, every reason in document order, each with where it stands.
fn check_keys(pairs: &[(G, G)], at: &str, reasons: &mut Vec<Refused>) {
    for (k, v) in pairs {
        let G::Str(key) = k else {
            reasons.push(Refused::at(
                at,
                format!("config error, key is not of type string: {}", go_v(k)),
            ));
            continue;
        };
        if !KNOWN_KEYS.contains(&key.as_str()) {
            reasons.push(Refused::at(
                at,
                format!("config error, unknown key '{key}'"),
            ));
            continue;
        }
        let here = format!("{at}.{key}");
        match v {
            G::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    match item {
                        G::Map(inner) => check_keys(inner, &format!("{here}[{i}]"), reasons),
                        other => reasons.push(Refused::at(
                            &here,
                            format!(
                                "config error, yaml file contains list of type other than map: {}",
                                go_v(other)
                            ),
                        )),
                    }
                }
            }
            G::Map(inner) => check_keys(inner, &here, reasons),
            G::Str(_) | G::Int(_) | G::Bool(_) | G::Null => {}
            G::Float(_) | G::Uint(_) => reasons.push(Refused::at(&here, "error checking config")),
        }
    }
}

/// Go's `%v` of a decoded value.
fn go_v(v: &G) -> String {
    match v {
        G::Null => "<nil>".into(),
        G::Bool(b) => b.to_string(),
        G::Int(i) => i.to_string(),
        G::Uint(u) => u.to_string(),
        G::Float(f) => go_float(*f),
        G::Str(s) => s.clone(),
        G::Seq(items) => format!("[{}]", items.iter().map(go_v).collect::<Vec<_>>().join(" ")),
        G::Map(pairs) => {
            let mut shown: Vec<String> = pairs
                .iter()
                .map(|(k, v)| format!("{}:{}", go_v(k), go_v(v)))
                .collect();
            shown.sort();
            format!("map[{}]", shown.join(" "))
        }
    }
}

/// Go's `%v` of a float64 (strconv's shortest `%g`): exponent form below 1e-4 or from 1e6.
fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

/// Pass 2's decoder: the document into the loader's structs, collecting unmarshal errors as
/// yaml.v2 does (a failure such as an alias that contains itself stops it).
struct Typed<'d> {
    doc: &'d Doc,
    terrors: Vec<String>,
    notes: Vec<Note>,
    expanding: Vec<NodeId>,
}

type Field<S> = fn(&mut Typed<'_>, &str, NodeId, &mut S) -> Result<bool, String>;

impl<'d> Typed<'d> {
    fn new(doc: &'d Doc) -> Self {
        let mut typed = Typed {
            doc,
            terrors: Vec::new(),
            notes: Vec::new(),
            expanding: Vec::new(),
        };
        typed.shape_notes();
        typed
    }

    fn note(&mut self, id: NodeId, what: impl Into<String>) {
        let line = self.doc.node(id).line + 1;
        self.notes.push(Note {
            at: format!("line {line}"),
            what: what.into(),
        });
    }

    /// Aliases, tags and duplicate keys anywhere: YAML the renderer never writes.
    fn shape_notes(&mut self) {
        for id in 0..self.doc.nodes.len() {
            match &self.doc.node(id).kind {
                Kind::Alias { name, .. } => self.note(id, format!("the alias *{name}")),
                Kind::Scalar { tag, .. } if !tag.is_empty() => {
                    self.note(id, format!("the tag {}", short_tag(tag)))
                }
                Kind::Mapping(pairs) => {
                    let keys: Vec<(NodeId, String)> = pairs
                        .iter()
                        .filter_map(|&(k, _)| match &self.doc.node(k).kind {
                            Kind::Scalar { value, .. } => Some((k, value.clone())),
                            _ => None,
                        })
                        .collect();
                    for (i, (k, key)) in keys.iter().enumerate() {
                        if key == "<<" {
                            self.note(*k, "the merge key <<");
                        } else if keys[..i].iter().any(|(_, earlier)| earlier == key) {
                            self.note(
                                *k,
                                format!("the repeated key '{key}' (the last one counts)"),
                            );
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn terror(&mut self, id: NodeId, rtag: &str, into: &str) {
        let node = self.doc.node(id);
        let shown = match &node.kind {
            Kind::Scalar { value, tag, .. } => scalar_shown(value, tag, rtag),
            _ => short_tag(rtag),
        };
        self.terrors.push(format!(
            "line {}: cannot unmarshal {shown} into {into}",
            node.line + 1
        ));
    }

    /// Decodes through aliases: `f` on the node an alias chain ends at.
    fn via<T>(
        &mut self,
        id: NodeId,
        out: &mut T,
        f: fn(&mut Self, NodeId, &mut T) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut target = id;
        let depth = self.expanding.len();
        while let Kind::Alias { name, target: next } = &self.doc.node(target).kind {
            if self.expanding.contains(&target) {
                return Err(format!("yaml: anchor '{name}' value contains itself"));
            }
            self.expanding.push(target);
            target = *next;
        }
        let done = f(self, target, out);
        self.expanding.truncate(depth);
        done
    }

    fn resolved(&self, id: NodeId) -> Result<Option<(String, Scalar, String)>, String> {
        match &self.doc.node(id).kind {
            Kind::Scalar {
                value,
                tag,
                implicit,
            } => {
                let (rtag, s) = resolve::scalar(value, tag, *implicit)?;
                Ok(Some((rtag, s, value.clone())))
            }
            _ => Ok(None),
        }
    }

    fn collection_terror(&mut self, id: NodeId, into: &str) {
        let tag = match self.doc.node(id).kind {
            Kind::Sequence(_) => resolve::SEQ,
            _ => resolve::MAP,
        };
        self.terror(id, tag, into);
    }

    fn text(&mut self, id: NodeId, out: &mut String) -> Result<(), String> {
        self.via(id, out, |s, id, out| {
            let Some((rtag, value, raw)) = s.resolved(id)? else {
                s.collection_terror(id, "string");
                return Ok(());
            };
            // yaml.v2 puts any scalar's text in a text field: `value: yes` is "yes", `0x10`
            // is "0x10", as the renderer meant them.
            let _ = rtag;
            match value {
                Scalar::Null => out.clear(),
                _ => *out = raw,
            }
            Ok(())
        })
    }

    fn flag(&mut self, id: NodeId, out: &mut bool) -> Result<(), String> {
        self.via(id, out, |s, id, out| {
            let Some((rtag, value, _)) = s.resolved(id)? else {
                s.collection_terror(id, "bool");
                return Ok(());
            };
            match value {
                Scalar::Null => *out = false,
                Scalar::Bool(b) => *out = b,
                _ => s.terror(id, &rtag, "bool"),
            }
            Ok(())
        })
    }

    fn count(&mut self, id: NodeId, out: &mut u32) -> Result<(), String> {
        self.via(id, out, |s, id, out| {
            let Some((rtag, value, _)) = s.resolved(id)? else {
                s.collection_terror(id, "uint32");
                return Ok(());
            };
            let fits = match value {
                Scalar::Null => Some(0),
                Scalar::Int(i) => u32::try_from(i).ok(),
                Scalar::Uint(u) => u32::try_from(u).ok(),
                Scalar::Float(f) if f >= 0.0 && f.trunc() <= f64::from(u32::MAX) => {
                    Some(f.trunc() as u32)
                }
                _ => None,
            };
            match fits {
                Some(n) => *out = n,
                None => s.terror(id, &rtag, "uint32"),
            }
            Ok(())
        })
    }

    /// A struct from a mapping (yaml.v2's `mappingStruct`): `field` decodes the fields it
    /// knows and says whether it knew the key; merges are followed; other keys are ignored.
    fn structure<S>(
        &mut self,
        id: NodeId,
        out: &mut S,
        into: &str,
        field: Field<S>,
    ) -> Result<(), String>
    where
        S: Default,
    {
        let kind = self.doc.node(id).kind.clone();
        match kind {
            Kind::Mapping(pairs) => {
                for (k, v) in pairs {
                    if is_merge(self.doc, k) {
                        self.merge_struct(v, out, into, field)?;
                        continue;
                    }
                    let mut name = String::new();
                    let before = self.terrors.len();
                    self.text(k, &mut name)?;
                    if self.terrors.len() > before {
                        continue;
                    }
                    if !field(self, &name, v, out)? {
                        self.note(
                            k,
                            format!("the key '{name}' in {} (ignored there)", place(into)),
                        );
                    } else if !RENDERED_KEYS.contains(&name.as_str()) {
                        self.note(k, format!("the key '{name}'"));
                    }
                }
            }
            Kind::Sequence(_) => self.terror(id, resolve::SEQ, into),
            Kind::Scalar { .. } => match self.resolved(id)? {
                Some((_, Scalar::Null, _)) => *out = S::default(),
                Some((rtag, _, _)) => self.terror(id, &rtag, into),
                None => {}
            },
            Kind::Alias { .. } => {}
        }
        Ok(())
    }

    fn merge_struct<S: Default>(
        &mut self,
        id: NodeId,
        out: &mut S,
        into: &str,
        field: Field<S>,
    ) -> Result<(), String> {
        let is_alias = matches!(self.doc.node(id).kind, Kind::Alias { .. });
        let mut target = id;
        while let Kind::Alias { target: next, .. } = &self.doc.node(target).kind {
            target = *next;
        }
        match self.doc.node(target).kind.clone() {
            Kind::Mapping(_) => self.structure(target, out, into, field),
            Kind::Sequence(items) if !is_alias => {
                for item in items.into_iter().rev() {
                    let mut inner = item;
                    while let Kind::Alias { target: next, .. } = &self.doc.node(inner).kind {
                        inner = *next;
                    }
                    if !matches!(self.doc.node(inner).kind, Kind::Mapping(_)) {
                        return Err(WANT_MAP.into());
                    }
                    self.structure(inner, out, into, field)?;
                }
                Ok(())
            }
            _ => Err(WANT_MAP.into()),
        }
    }

    fn root(&mut self) -> Result<YamlRoot, String> {
        let mut root = YamlRoot::default();
        if let Some(id) = self.doc.root {
            self.via(id, &mut root, |s, id, out| {
                s.structure(
                    id,
                    out,
                    "config.YamlRoot",
                    |s, name, v, out: &mut YamlRoot| {
                        match name {
                            "domain" => s.text(v, &mut out.domain)?,
                            "descriptors" => s.descriptors(v, &mut out.descriptors)?,
                            _ => return Ok(false),
                        }
                        Ok(true)
                    },
                )
            })?;
        }
        Ok(root)
    }

    fn descriptors(&mut self, id: NodeId, out: &mut Vec<YamlDescriptor>) -> Result<(), String> {
        self.via(id, out, |s, id, out| {
            let into = "[]config.YamlDescriptor";
            match s.doc.node(id).kind.clone() {
                Kind::Sequence(items) => {
                    out.clear();
                    for item in items {
                        let mut d = YamlDescriptor::default();
                        s.via(item, &mut d, |s, id, d| {
                            s.structure(id, d, "config.YamlDescriptor", descriptor_field)
                        })?;
                        out.push(d);
                    }
                }
                Kind::Mapping(_) => s.terror(id, resolve::MAP, into),
                _ => match s.resolved(id)? {
                    Some((_, Scalar::Null, _)) => out.clear(),
                    Some((rtag, _, _)) => s.terror(id, &rtag, into),
                    None => {}
                },
            }
            Ok(())
        })
    }

    fn rate_limit(&mut self, id: NodeId, out: &mut Option<YamlRateLimit>) -> Result<(), String> {
        self.via(id, out, |s, id, out| {
            if prepared_null(s.doc, id) {
                *out = None;
                return Ok(());
            }
            let rl = out.get_or_insert_with(YamlRateLimit::default);
            s.structure(id, rl, "config.YamlRateLimit", rate_limit_field)
        })
    }

    fn replaces(&mut self, id: NodeId, out: &mut Vec<String>) -> Result<(), String> {
        self.via(id, out, |s, id, out| {
            let into = "[]config.yamlReplaces";
            match s.doc.node(id).kind.clone() {
                Kind::Sequence(items) => {
                    out.clear();
                    for item in items {
                        let mut name = String::new();
                        s.via(item, &mut name, |s, id, name| {
                            s.structure(
                                id,
                                name,
                                "config.yamlReplaces",
                                |s, key, v, name: &mut String| {
                                    if key != "name" {
                                        return Ok(false);
                                    }
                                    s.text(v, name)?;
                                    Ok(true)
                                },
                            )
                        })?;
                        out.push(name);
                    }
                }
                Kind::Mapping(_) => s.terror(id, resolve::MAP, into),
                _ => match s.resolved(id)? {
                    Some((_, Scalar::Null, _)) => out.clear(),
                    Some((rtag, _, _)) => s.terror(id, &rtag, into),
                    None => {}
                },
            }
            Ok(())
        })
    }
}

fn descriptor_field(
    s: &mut Typed<'_>,
    name: &str,
    v: NodeId,
    out: &mut YamlDescriptor,
) -> Result<bool, String> {
    match name {
        "key" => s.text(v, &mut out.key)?,
        "value" => s.text(v, &mut out.value)?,
        "rate_limit" => s.rate_limit(v, &mut out.rate_limit)?,
        "descriptors" => s.descriptors(v, &mut out.descriptors)?,
        "shadow_mode" => s.flag(v, &mut out.shadow_mode)?,
        "quota_mode" => s.flag(v, &mut out.quota_mode)?,
        "detailed_metric" => s.flag(v, &mut out.detailed_metric)?,
        "value_to_metric" => s.flag(v, &mut out.value_to_metric)?,
        "share_threshold" => s.flag(v, &mut out.share_threshold)?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn rate_limit_field(
    s: &mut Typed<'_>,
    name: &str,
    v: NodeId,
    out: &mut YamlRateLimit,
) -> Result<bool, String> {
    match name {
        "requests_per_unit" => s.count(v, &mut out.requests_per_unit)?,
        "unit" => s.text(v, &mut out.unit)?,
        "unlimited" => s.flag(v, &mut out.unlimited)?,
        "name" => s.text(v, &mut out.name)?,
        "replaces" => s.replaces(v, &mut out.replaces)?,
        _ => return Ok(false),
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> Vec<String> {
        match decode(text) {
            Ok(d) => panic!("accepted: {:?}", d.root),
            Err(reasons) => reasons.into_iter().map(|r| r.reason).collect(),
        }
    }

    #[test]
    fn a_list_or_map_where_text_is_due() {
        assert_eq!(
            refused("domain: d\ndescriptors:\n- key: k\n  value: []\n"),
            ["error loading config file: yaml: unmarshal errors:\n  line 4: cannot unmarshal !!seq into string"]
        );
        assert_eq!(
            refused("domain: {key: x}\n"),
            ["error loading config file: yaml: unmarshal errors:\n  line 1: cannot unmarshal !!map into string"]
        );
    }

    #[test]
    fn text_where_a_list_map_count_or_flag_is_due() {
        let one = |yaml: &str| refused(yaml).join("|");
        assert!(one("domain: d\ndescriptors: x\n")
            .ends_with("cannot unmarshal !!str `x` into []config.YamlDescriptor"));
        assert!(one("domain: d\ndescriptors:\n- key: k\n  rate_limit: 5\n")
            .ends_with("cannot unmarshal !!int `5` into config.YamlRateLimit"));
        assert!(
            one("domain: d\ndescriptors:\n- key: k\n  shadow_mode: 'true'\n")
                .ends_with("cannot unmarshal !!str `true` into bool")
        );
        assert!(one("domain: d\ndescriptors:\n- key: k\n  rate_limit: {unit: second, requests_per_unit: 4294967296}\n").ends_with("cannot unmarshal !!int `4294967296` into uint32"));
        assert!(one("domain: d\ndescriptors:\n- key: k\n  rate_limit: {unit: second, requests_per_unit: -1}\n").ends_with("cannot unmarshal !!int `-1` into uint32"));
    }

    #[test]
    fn floats_and_integers_from_2_63_fail_the_first_pass_anywhere() {
        assert_eq!(refused("domain: d\nname: 1.5\n"), ["error checking config"]);
        assert_eq!(
            refused("domain: d\ndescriptors:\n- key: k\n  value: 9223372036854775808\n"),
            ["error checking config"]
        );
        let ok = decode("domain: d\ndescriptors:\n- key: k\n  value: 9223372036854775807\n")
            .expect("int64 fits");
        assert_eq!(ok.root.descriptors[0].value, "9223372036854775807");
    }

    #[test]
    fn known_keys_anywhere_pass_and_are_ignored_where_they_mean_nothing() {
        let d =
            decode("domain: d\nunit: x\ndescriptors:\n- key: k\n  domain: y\n").expect("accepted");
        assert_eq!(d.root.descriptors[0].key, "k");
        assert_eq!(d.notes.len(), 2, "{:?}", d.notes);
    }

    #[test]
    fn yaml_1_1_and_duplicates_read_as_yaml_v2_reads_them() {
        let d = decode(
            "domain: a\ndomain: b\ndescriptors:\n- key: k\n  value: 0x10\n  shadow_mode: yes\n",
        )
        .expect("accepted");
        assert_eq!(d.root.domain, "b");
        assert_eq!(d.root.descriptors[0].value, "0x10");
        assert!(d.root.descriptors[0].shadow_mode);
        // The repeated key and the key the renderer never writes.
        assert_eq!(d.notes.len(), 2, "{:?}", d.notes);
    }

    #[test]
    fn null_spellings_and_the_rate_limit_pointer() {
        let none = decode("domain: d\ndescriptors:\n- key: k\n  rate_limit: ~\n").expect("ok");
        assert_eq!(none.root.descriptors[0].rate_limit, None);
        let zeroed = decode("domain: d\ndescriptors:\n- key: k\n  rate_limit: Null\n").expect("ok");
        assert_eq!(
            zeroed.root.descriptors[0].rate_limit,
            Some(YamlRateLimit::default())
        );
    }

    #[test]
    fn merges_and_aliases() {
        let d = decode("domain: d\ndescriptors:\n- &base {key: k, rate_limit: {unit: second, requests_per_unit: 1}}\n- <<: *base\n  value: v\n")
            .expect("accepted");
        assert_eq!(d.root.descriptors[1].key, "k");
        assert_eq!(d.root.descriptors[1].value, "v");
        assert_eq!(
            refused("domain: d\ndescriptors: &a\n- key: k\n  descriptors: *a\n"),
            ["error loading config file: yaml: anchor 'a' value contains itself"]
        );
    }

    #[test]
    fn non_string_keys_and_a_root_that_is_not_a_map() {
        assert_eq!(
            refused("0.25: d\n"),
            ["config error, key is not of type string: 0.25"]
        );
        assert_eq!(
            refused("- a\n"),
            ["error loading config file: yaml: unmarshal errors:\n  line 1: cannot unmarshal !!seq into map[interface {}]interface {}"]
        );
        assert!(decode("").expect("empty").root == YamlRoot::default());
    }

    #[test]
    fn go_formats_floats_as_fmt_does() {
        assert_eq!(go_float(0.25), "0.25");
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(123456.0), "123456");
        assert_eq!(go_float(1.5e-7), "1.5e-07");
        assert_eq!(go_float(0.00001), "1e-05");
    }
}
