//! Building a [`Tree`](super::Tree) in one pass over a session's lines: a node per entry,
//! parents resolved once every id is known, labels and the name applied at the end, and the
//! checks that drop torn or unbalanced lines.

use super::*;

/// One pass over the text building nodes, then the id map and parent resolution.
pub(super) struct Builder {
    pub(super) path: PathBuf,
    pub(super) nodes: Vec<Node>,
    /// Parents other than the previous line, resolved once every id is known: (child, parent id).
    pub(super) pending: Vec<(u32, EntryId)>,
    /// The last entry in file order that decides the leaf (an entry, or a `leaf` entry).
    pub(super) leaf_decider: u32,
    /// Label changes in file order (target, label, timestamp), applied when finished so that
    /// builders of consecutive parts of a file can be joined.
    pub(super) label_changes: Vec<(EntryId, Option<String>, String)>,
    /// The name the last `session_info` gave (`Some(None)`: cleared), if any was seen.
    pub(super) name: Option<Option<String>>,
    pub(super) diagnostics: Vec<Diagnostic>,
    pub(super) ends_without_newline: bool,
    pub(super) line_count: u32,
    pub(super) header: Option<SessionHeader>,
    pub(super) version: u32,
    /// Where the next line to index starts.
    pub(super) next_line: usize,
    pub(super) repaired: HashMap<u32, String>,
    /// By node: whether its line took the literal layout scan, which does not look past the
    /// tree fields. Those of them that end up with no child have their brackets counted when
    /// the file is indexed (see [`Builder::drop_torn_leaves`]).
    pub(super) layout_only: Vec<bool>,
    /// Whether the line being indexed took the literal layout scan.
    pub(super) line_layout_only: bool,
    /// The id table of exactly these nodes, as a sidecar stored it: [`Builder::index_ids`]
    /// takes it instead of inserting every id again. Anything that adds, drops or moves a
    /// node clears it.
    pub(super) restored_ids: Option<IdIndex>,
}

impl Builder {
    pub(super) fn new(path: &Path, text_len: usize) -> Self {
        // Untouched capacity costs no memory; real sessions average well over 512 bytes a line.
        let estimate = (text_len / 512).max(16);
        Self {
            path: path.to_path_buf(),
            nodes: Vec::with_capacity(estimate),
            pending: Vec::new(),
            leaf_decider: NONE,
            label_changes: Vec::new(),
            name: None,
            diagnostics: Vec::new(),
            ends_without_newline: false,
            line_count: 0,
            header: None,
            version: CURRENT_VERSION,
            next_line: 0,
            repaired: HashMap::new(),
            layout_only: Vec::with_capacity(estimate),
            line_layout_only: false,
            restored_ids: None,
        }
    }

    /// A builder for the lines from `start` on of a file whose header is `header` (already
    /// indexed by the builder of the part before).
    pub(super) fn for_part(
        path: &Path,
        header: &SessionHeader,
        start: usize,
        text_len: usize,
    ) -> Self {
        let mut builder = Self::new(path, text_len);
        builder.version = header.effective_version();
        builder.header = Some(header.clone());
        builder.next_line = start;
        builder
    }

    /// Appends the builder of the next part of the file: its nodes, lines and diagnostics
    /// follow this one's.
    pub(super) fn join(&mut self, next: Builder) {
        self.restored_ids = None;
        let offset = self.nodes.len() as u32;
        let lines = self.line_count;
        self.nodes.extend(next.nodes.into_iter().map(|mut node| {
            node.line += lines;
            if node.parent != NONE {
                node.parent += offset;
            }
            node
        }));
        self.pending.extend(
            next.pending
                .into_iter()
                .map(|(child, parent)| (child + offset, parent)),
        );
        if next.leaf_decider != NONE {
            self.leaf_decider = next.leaf_decider + offset;
        }
        self.label_changes.extend(next.label_changes);
        if next.name.is_some() {
            self.name = next.name;
        }
        self.diagnostics
            .extend(next.diagnostics.into_iter().map(|mut diagnostic| {
                diagnostic.line += lines as usize;
                diagnostic
            }));
        self.layout_only.extend(next.layout_only);
        self.repaired.extend(
            next.repaired
                .into_iter()
                .map(|(index, text)| (index + offset, text)),
        );
        self.line_count += next.line_count;
        self.next_line = next.next_line;
    }

    pub(super) fn diagnose(&mut self, line: usize, problem: Problem) {
        self.diagnostics.push(Diagnostic {
            path: self.path.clone(),
            line,
            problem,
        });
    }

    /// Indexes the lines not indexed yet in `bytes`, which holds the text from offset `base` on
    /// (and must reach back to the next line to index). Without `at_end`, a last line that may
    /// still continue is left for the next call.
    pub(super) fn feed(
        &mut self,
        bytes: &[u8],
        base: usize,
        at_end: bool,
    ) -> Result<(), SessionError> {
        while self.next_line - base < bytes.len() {
            let start = self.next_line - base;
            let mut probe = start;
            while let Some(b' ' | b'\t' | b'\r') = bytes.get(probe) {
                probe += 1;
            }
            if probe < bytes.len() && bytes[probe] == b'\n' {
                // A blank line: counted, nothing else.
                self.line_count += 1;
                self.next_line = base + probe + 1;
                continue;
            }
            if probe == bytes.len() {
                if at_end {
                    self.line_count += 1;
                    self.next_line = base + bytes.len();
                }
                return Ok(());
            }
            // Lines end at newlines (JSON strings cannot hold a raw one). The tree fields come
            // from the line's first keys where it is laid out as Pi and strata write it, else
            // from a full structural scan.
            let rest = &bytes[start..];
            let end = match memchr::memchr(b'\n', rest) {
                Some(length) => start + length,
                None if at_end => bytes.len(),
                None => return Ok(()),
            };
            let line = &bytes[start..end];
            // Nearly every line takes the literal layout scan, which reads the tree fields
            // only. A torn line (a write cut short after an inner `}`, then more lines) can
            // pass it; such a line never gets a child, since no writer links to an entry it
            // failed to write, so only lines left childless are checked further, once the
            // whole file is indexed (`drop_torn_leaves`). Every other line gets one pass over
            // its bytes here: more brackets opened than closed sends it to the full scan (as
            // does a line whose strings hold unbalanced brackets).
            let layout = scan_pi_tree_fields(line);
            self.line_layout_only = layout.is_some();
            let (scanned, ascii) = match layout {
                Some(scanned) => (Ok(scanned), line.is_ascii()),
                None => {
                    let (balanced, ascii) = bracket_balance_and_ascii(line);
                    let prefix = if balanced { scan_prefix(line) } else { None };
                    let scanned = match prefix {
                        Some(scanned) => Ok(scanned),
                        None => scan_entry(line),
                    };
                    (scanned, ascii)
                }
            };
            self.line_count += 1;
            self.next_line = base + end + 1;
            let unterminated = end == bytes.len();
            let start = base + start;
            if self.header.is_none() {
                let header = match std::str::from_utf8(line) {
                    Ok(text) => SessionHeader::parse(text),
                    Err(_) => SessionHeader::parse(&String::from_utf8_lossy(line)),
                };
                match header {
                    Some(parsed) => {
                        self.version = parsed.effective_version();
                        self.header = Some(parsed);
                        continue;
                    }
                    None => {
                        return Err(SessionError::MissingHeader {
                            path: self.path.clone(),
                            line: self.line_count as usize,
                            reason: SessionHeader::problem(&String::from_utf8_lossy(line)),
                        });
                    }
                }
            }
            let line_no = self.line_count as usize;
            // Checked here, while the line is in cache; almost every line is plain ASCII.
            if ascii || std::str::from_utf8(line).is_ok() {
                self.entry_line(line, start, line_no, unterminated, scanned);
            } else {
                self.diagnose(line_no, Problem::InvalidUtf8);
                let lossy = String::from_utf8_lossy(line).into_owned();
                let scanned = scan_entry(lossy.as_bytes());
                self.line_layout_only = false;
                let index = self.nodes.len() as u32;
                let indexed =
                    self.entry_line(lossy.as_bytes(), start, line_no, unterminated, scanned);
                if indexed {
                    // The node spans the raw line; its text is the repaired copy.
                    if let Some(node) = self.nodes.last_mut() {
                        node.len = line.len() as u32;
                    }
                    self.repaired.insert(index, lossy);
                }
            }
        }
        Ok(())
    }

    /// Indexes one entry line; false when it was skipped (and diagnosed).
    pub(super) fn entry_line(
        &mut self,
        line: &[u8],
        start: usize,
        line_no: usize,
        unterminated: bool,
        scanned: Result<Scanned<'_>, ScanError>,
    ) -> bool {
        let version = self.version;
        let end = start + line.len();
        let scanned = match scanned {
            // A cut-short write can still look balanced only if it is complete; confirm with serde.
            Ok(scanned)
                if !unterminated
                    || serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok() =>
            {
                scanned
            }
            Ok(_) => {
                self.diagnose(line_no, Problem::TornLastLine { bytes: line.len() });
                return false;
            }
            Err(error) => {
                let problem = if unterminated {
                    Problem::TornLastLine { bytes: line.len() }
                } else {
                    Problem::MalformedLine {
                        reason: format!("{} at byte {}", error.reason, error.offset + 1),
                    }
                };
                self.diagnose(line_no, problem);
                return false;
            }
        };
        let Some(entry_type) = scanned.entry_type.as_deref() else {
            self.diagnose(
                line_no,
                Problem::MalformedLine {
                    reason: "no string `type` field".into(),
                },
            );
            return false;
        };
        if entry_type == "session" {
            self.diagnose(
                line_no,
                Problem::MalformedLine {
                    reason: "a second `session` header".into(),
                },
            );
            return false;
        }
        let index = self.nodes.len() as u32;
        let legacy_v1 = version < 2;
        let id = if legacy_v1 {
            // v1 has no ids: Pi draws random ones and rewrites the file; strata derives them from
            // the position so they are the same on every open and the file stays untouched.
            EntryId::from(format!("{:08x}", index + 1))
        } else {
            match scanned.id.as_deref() {
                Some(id) => EntryId::new(id),
                None => {
                    self.diagnose(line_no, Problem::MissingId);
                    return false;
                }
            }
        };
        let mut kind = EntryKind::from_type(entry_type);
        if let EntryKind::Message(_) = kind {
            let role = scanned.role.as_deref().unwrap_or("");
            kind = EntryKind::Message(Role::from_str(role, version < CURRENT_VERSION));
        }
        let parent = if legacy_v1 {
            index.checked_sub(1).unwrap_or(NONE)
        } else {
            match &scanned.parent {
                Parent::Id(parent) if parent.as_bytes() == id.as_bytes() => NONE,
                // Most entries continue from the line before: resolved without a lookup.
                Parent::Id(parent)
                    if self
                        .nodes
                        .last()
                        .is_some_and(|prev| prev.id.as_bytes() == parent.as_bytes()) =>
                {
                    index - 1
                }
                Parent::Id(parent) => {
                    self.pending.push((index, EntryId::new(&**parent)));
                    NONE
                }
                Parent::Null | Parent::Absent | Parent::Other => NONE,
            }
        };
        self.leaf_decider = index;
        match kind {
            EntryKind::Label => {
                #[derive(serde::Deserialize)]
                #[serde(rename_all = "camelCase")]
                struct LabelFields {
                    target_id: Option<String>,
                    label: Option<String>,
                    #[serde(default)]
                    timestamp: String,
                }
                if let Ok(fields) = serde_json::from_slice::<LabelFields>(line)
                    && let Some(target) = fields.target_id
                {
                    self.label_changes.push((
                        EntryId::from(target),
                        fields.label,
                        fields.timestamp,
                    ));
                }
            }
            EntryKind::SessionInfo => {
                #[derive(serde::Deserialize)]
                struct InfoFields {
                    name: Option<String>,
                }
                if let Ok(fields) = serde_json::from_slice::<InfoFields>(line) {
                    self.name = Some(clean_name(fields.name.as_deref()));
                }
            }
            _ => {}
        }
        self.nodes.push(Node {
            start,
            len: (end - start) as u32,
            line: line_no as u32,
            id,
            parent,
            kind,
        });
        self.layout_only.push(self.line_layout_only);
        true
    }

    /// Checks the lines that took only the literal layout scan and have no child (no line
    /// names them as parent): a torn line is among them, if there is one. Those whose
    /// brackets do not balance get the full scan, and the ones it refuses are dropped and
    /// reported as the full scan at indexing would have reported them. Runs before the id
    /// map is built, so dropping needs no more than renumbering.
    pub(super) fn drop_torn_leaves(&mut self, text: &Text) -> Result<(), SessionError> {
        let mut has_child = vec![false; self.nodes.len()];
        for node in &self.nodes {
            if node.parent != NONE {
                has_child[node.parent as usize] = true;
            }
        }
        let named: std::collections::HashSet<&[u8]> = self
            .pending
            .iter()
            .map(|(_, parent)| parent.as_bytes())
            .collect();
        let mut torn = Vec::new();
        let mut buffer = Vec::new();
        for (index, node) in self.nodes.iter().enumerate() {
            if !self.layout_only.get(index).copied().unwrap_or(false)
                || has_child[index]
                || named.contains(node.id.as_bytes())
            {
                continue;
            }
            let line: &[u8] = match text {
                Text::Memory(bytes) => bytes
                    .get(node.start..node.start + node.len as usize)
                    .unwrap_or(&[]),
                Text::File(file) => {
                    buffer.resize(node.len as usize, 0);
                    read_exact_at(file, &mut buffer, node.start as u64)
                        .map_err(|e| SessionError::io(&self.path, e))?;
                    &buffer
                }
            };
            if bracket_balance_and_ascii(line).0 {
                continue;
            }
            if let Err(error) = scan_entry(line) {
                torn.push((index as u32, node.line as usize, error));
            }
        }
        if torn.is_empty() {
            return Ok(());
        }
        self.restored_ids = None;
        for (_, line, error) in &torn {
            self.diagnose(
                *line,
                Problem::MalformedLine {
                    reason: format!("{} at byte {}", error.reason, error.offset + 1),
                },
            );
        }
        let dropped: Vec<u32> = torn.iter().map(|(index, _, _)| *index).collect();
        // New index of each node: its old one less the dropped nodes before it.
        let renumber = |index: u32| index - dropped.partition_point(|&gone| gone < index) as u32;
        drop_indices(&mut self.nodes, &dropped);
        drop_indices(&mut self.layout_only, &dropped);
        for node in &mut self.nodes {
            if node.parent != NONE {
                // A dropped node is no one's parent.
                node.parent = renumber(node.parent);
            }
        }
        // A dropped line's own parent link (not the line before it) and repair go with it.
        let kept = |index: &u32| dropped.binary_search(index).is_err();
        self.pending.retain(|(child, _)| kept(child));
        for (child, _) in &mut self.pending {
            *child = renumber(*child);
        }
        self.repaired = std::mem::take(&mut self.repaired)
            .into_iter()
            .filter(|(index, _)| kept(index))
            .map(|(index, text)| (renumber(index), text))
            .collect();
        let decider = self.leaf_decider;
        if decider != NONE {
            let kept_before = renumber(decider);
            self.leaf_decider = if dropped.binary_search(&decider).is_err() {
                kept_before
            } else {
                // The kept line before a dropped last line decides, as if it was never indexed.
                kept_before.checked_sub(1).unwrap_or(NONE)
            };
        }
        Ok(())
    }

    /// Builds the id map (sized exactly, now that the count is known) and resolves the parents
    /// that were not the previous line.
    pub(super) fn index_ids(&mut self) -> (IdIndex, bool) {
        let mut duplicates = Vec::new();
        let by_id = match self.restored_ids.take() {
            // Stored only when every id was distinct: nothing to report.
            Some(restored) if restored.len == self.nodes.len() => restored,
            _ => {
                let mut by_id = IdIndex::with_capacity(self.nodes.len());
                for index in 0..self.nodes.len() as u32 {
                    if by_id.insert(&self.nodes, index).is_some() {
                        let node = &self.nodes[index as usize];
                        duplicates.push((node.line as usize, node.id.clone()));
                    }
                }
                by_id
            }
        };
        let repeated = !duplicates.is_empty();
        for (line, id) in duplicates {
            self.diagnose(line, Problem::DuplicateId { id });
        }
        let pending = std::mem::take(&mut self.pending);
        let mut forward = false;
        for (child, parent_id) in pending {
            match by_id.get(&self.nodes, parent_id.as_str()) {
                Some(parent) if parent != child => {
                    self.nodes[child as usize].parent = parent;
                    forward |= parent > child;
                }
                _ => {
                    let node = &self.nodes[child as usize];
                    let (line, id) = (node.line as usize, node.id.clone());
                    self.diagnose(
                        line,
                        Problem::UnknownParent {
                            id,
                            parent: parent_id,
                        },
                    );
                }
            }
        }
        if forward {
            self.break_cycles();
        }
        (by_id, repeated)
    }

    /// Parents normally precede children; a file linking forward could form a cycle, which
    /// would make walks endless. Each cycle is cut at the entry where it is found.
    pub(super) fn break_cycles(&mut self) {
        // 0 = unvisited, 1 = on the current walk, 2 = done.
        let mut state = vec![0u8; self.nodes.len()];
        for start in 0..self.nodes.len() {
            let mut walk = Vec::new();
            let mut current = start as u32;
            while current != NONE && state[current as usize] == 0 {
                state[current as usize] = 1;
                walk.push(current);
                current = self.nodes[current as usize].parent;
            }
            if current != NONE && state[current as usize] == 1 {
                let node = &mut self.nodes[current as usize];
                node.parent = NONE;
                let (line, id) = (node.line as usize, node.id.clone());
                self.diagnose(line, Problem::ParentCycle { id });
            }
            for index in walk {
                state[index as usize] = 2;
            }
        }
    }

    /// The leaf: the last entry, or the position a final `leaf` entry points at.
    pub(super) fn resolve_leaf(&mut self) -> u32 {
        let decider = self.leaf_decider;
        if decider == NONE || self.nodes[decider as usize].kind != EntryKind::Leaf {
            return decider;
        }
        let node = &self.nodes[decider as usize];
        if node.parent != NONE {
            return node.parent;
        }
        // A `leaf` entry to null is a reset; one to a missing entry is damage, and then the
        // entry itself is the leaf, as Pi takes it.
        let missing = self.diagnostics.iter().find_map(|d| match &d.problem {
            Problem::UnknownParent { id, parent } if id == &node.id => Some(parent.clone()),
            _ => None,
        });
        match missing {
            Some(target) => {
                let line = node.line as usize;
                self.diagnose(line, Problem::UnknownLeafTarget { target });
                decider
            }
            None => NONE,
        }
    }

    pub(super) fn finish(
        mut self,
        text: Text,
        text_len: usize,
        ends_without_newline: bool,
    ) -> Result<(Tree, Vec<Diagnostic>), SessionError> {
        let Some(header) = self.header.take() else {
            return Err(SessionError::MissingHeader {
                path: self.path.clone(),
                line: (self.line_count as usize).max(1),
                reason: "the file has no `session` header line".to_owned(),
            });
        };
        self.ends_without_newline = ends_without_newline;
        self.drop_torn_leaves(&text)?;
        let mut labels = HashMap::new();
        for (target, label, timestamp) in std::mem::take(&mut self.label_changes) {
            apply_label(&mut labels, target, label.as_deref(), &timestamp);
        }
        let (by_id, repeated_ids) = self.index_ids();
        let leaf = self.resolve_leaf();
        self.diagnostics.sort_by_key(|d| d.line);
        let tree = Tree {
            path: self.path,
            header,
            line_cache: OnceLock::new(),
            cached_lines: match &text {
                Text::File(_) => self.nodes.len(),
                Text::Memory(_) => 0,
            },
            text,
            text_len,
            appended: String::new(),
            repaired: self.repaired,
            nodes: self.nodes,
            by_id,
            child_lists: OnceLock::new(),
            repeated_ids,
            leaf,
            labels,
            name: self.name.flatten(),
            ends_without_newline: self.ends_without_newline,
            line_count: self.line_count,
        };
        Ok((tree, self.diagnostics))
    }
}

/// Removes the elements at `dropped` (ascending indices) from `items`, keeping the order.
pub(super) fn drop_indices<T>(items: &mut Vec<T>, dropped: &[u32]) {
    let mut position = 0u32;
    items.retain(|_| {
        let keep = dropped.binary_search(&position).is_err();
        position += 1;
        keep
    });
}

/// Whether `{`/`[` and `}`/`]` are equally many in `line` (strings included), and whether it is
/// all ASCII. It is the one pass every byte of a file gets at open, so it is written for the
/// compiler's vector code: per-lane counters over fixed 16-byte chunks, summed only every
/// [`LANE_FLUSH`] chunks (no horizontal sum per chunk), and no branch on the bytes.
pub(super) fn bracket_balance_and_ascii(line: &[u8]) -> (bool, bool) {
    // One vector register of counters and one of high bits (more lanes spill to the stack).
    pub(super) const LANES: usize = 16;
    // A lane's counter moves by at most 2 a chunk: 60 chunks stay within an `i8`.
    pub(super) const LANE_FLUSH: usize = 60;
    let mut depth: i64 = 0;
    let mut high = 0u8;
    let mut chunks = line.chunks_exact(LANES);
    loop {
        let mut lanes = [0i8; LANES];
        let mut lane_high = [0u8; LANES];
        let mut taken = 0;
        for chunk in chunks.by_ref().take(LANE_FLUSH) {
            for ((lane, high), &byte) in lanes.iter_mut().zip(&mut lane_high).zip(chunk) {
                let opened = i8::from(byte == b'{') + i8::from(byte == b'[');
                let closed = i8::from(byte == b'}') + i8::from(byte == b']');
                *lane += opened - closed;
                *high |= byte;
            }
            taken += 1;
        }
        depth += lanes.iter().map(|&lane| i64::from(lane)).sum::<i64>();
        high |= lane_high.iter().fold(0, |all, &byte| all | byte);
        if taken < LANE_FLUSH {
            break;
        }
    }
    for &byte in chunks.remainder() {
        depth += i64::from(u8::from(byte == b'{') + u8::from(byte == b'['));
        depth -= i64::from(u8::from(byte == b'}') + u8::from(byte == b']'));
        high |= byte;
    }
    (depth == 0, high < 0x80)
}
