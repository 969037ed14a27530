//! A small tokenizer for code on the page: comments, strings, numbers and keywords get CSS
//! classes (`tok-c`, `tok-s`, `tok-n`, `tok-k`); everything else is escaped text. It knows
//! families of languages by their comment syntax, not grammars: enough to read code at a
//! glance without a highlighting engine or any script.

use crate::html::escape;

/// How a language writes comments, which decides what the tokenizer treats as one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// `//` and `/* */` (Rust, C, JavaScript, Go, Java, …).
    CLike,
    /// `#` (shell, Python, Ruby, TOML, YAML, …).
    Hash,
    /// No comment syntax known: strings and numbers only.
    Plain,
}

const KEYWORDS: &[&str] = &[
    "as",
    "async",
    "await",
    "break",
    "case",
    "class",
    "const",
    "continue",
    "def",
    "default",
    "do",
    "done",
    "elif",
    "else",
    "enum",
    "esac",
    "except",
    "export",
    "extends",
    "false",
    "fi",
    "finally",
    "fn",
    "for",
    "from",
    "func",
    "function",
    "if",
    "impl",
    "import",
    "in",
    "interface",
    "let",
    "local",
    "loop",
    "match",
    "mod",
    "move",
    "mut",
    "new",
    "nil",
    "None",
    "null",
    "package",
    "pass",
    "pub",
    "raise",
    "return",
    "self",
    "Self",
    "static",
    "struct",
    "switch",
    "then",
    "this",
    "trait",
    "true",
    "try",
    "type",
    "use",
    "var",
    "where",
    "while",
    "with",
    "yield",
    "True",
    "False",
    "Some",
    "Ok",
    "Err",
    "echo",
    "elif",
    "crate",
    "unsafe",
    "dyn",
    "ref",
];

fn family(language: &str) -> Option<Family> {
    let language = language.trim().to_ascii_lowercase();
    let language = language.rsplit('.').next().unwrap_or("");
    Some(match language {
        "rust" | "rs" | "c" | "h" | "cpp" | "cc" | "hpp" | "js" | "javascript" | "mjs" | "ts"
        | "typescript" | "tsx" | "jsx" | "go" | "java" | "kt" | "kotlin" | "swift" | "cs"
        | "scala" | "json" | "jsonc" | "css" | "scss" | "proto" | "zig" | "dart" => Family::CLike,
        "sh" | "bash" | "zsh" | "shell" | "console" | "py" | "python" | "rb" | "ruby" | "toml"
        | "yaml" | "yml" | "make" | "makefile" | "dockerfile" | "r" | "pl" | "perl" | "nix"
        | "ini" | "conf" | "cfg" | "env" | "gitignore" => Family::Hash,
        "txt" | "text" | "md" | "markdown" | "diff" | "patch" | "" => Family::Plain,
        _ => return None,
    })
}

/// The language of a file path, by its extension (`None`: not one the tokenizer knows).
pub fn language_of_path(path: &str) -> Option<&str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let extension = name.rsplit_once('.').map_or(name, |(_, ext)| ext);
    family(extension).map(|_| extension)
}

/// `code` as HTML inside `<pre><code>`, highlighted when `language` is known (a fence's
/// info string or a file extension).
pub fn code_block(code: &str, language: Option<&str>) -> String {
    let family = language.and_then(family);
    let class = language
        .map(|l| {
            l.chars()
                .filter(|c| c.is_ascii_alphanumeric())
                .collect::<String>()
        })
        .filter(|l| !l.is_empty())
        .map(|l| format!(" class=\"language-{l}\""))
        .unwrap_or_default();
    let body = match family {
        Some(family) => highlight(code, family),
        None => escape(code),
    };
    format!("<pre class=\"code\"><code{class}>{body}</code></pre>")
}

fn span(out: &mut String, class: &str, text: &str) {
    out.push_str("<span class=\"");
    out.push_str(class);
    out.push_str("\">");
    out.push_str(&escape(text));
    out.push_str("</span>");
}

fn highlight(code: &str, family: Family) -> String {
    let chars: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len() * 2);
    let mut i = 0;
    let take_until = |from: usize, end: &dyn Fn(usize) -> bool| {
        let mut j = from;
        while j < chars.len() && !end(j) {
            j += 1;
        }
        j
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let line_comment = match family {
            Family::CLike => c == '/' && next == Some('/'),
            Family::Hash => c == '#' && (i == 0 || !chars[i - 1].is_alphanumeric()),
            Family::Plain => false,
        };
        if line_comment {
            let end = take_until(i, &|j| chars[j] == '\n');
            span(&mut out, "tok-c", &chars[i..end].iter().collect::<String>());
            i = end;
        } else if family == Family::CLike && c == '/' && next == Some('*') {
            let mut end = i + 2;
            while end < chars.len() && !(chars[end - 1] == '*' && chars[end] == '/' && end > i + 2)
            {
                end += 1;
            }
            let end = (end + 1).min(chars.len());
            span(&mut out, "tok-c", &chars[i..end].iter().collect::<String>());
            i = end;
        } else if c == '"' || c == '`' || (c == '\'' && family != Family::CLike) {
            let mut end = i + 1;
            while end < chars.len() && chars[end] != c && chars[end] != '\n' {
                end += if chars[end] == '\\' { 2 } else { 1 };
            }
            let end = (end + 1).min(chars.len());
            span(&mut out, "tok-s", &chars[i..end].iter().collect::<String>());
            i = end;
        } else if c.is_ascii_digit() && (i == 0 || !is_word(chars[i - 1])) {
            let end = take_until(i, &|j| {
                !(chars[j].is_ascii_alphanumeric() || chars[j] == '.' || chars[j] == '_')
            });
            span(&mut out, "tok-n", &chars[i..end].iter().collect::<String>());
            i = end;
        } else if is_word(c) {
            let end = take_until(i, &|j| !is_word(chars[j]));
            let word: String = chars[i..end].iter().collect();
            if KEYWORDS.contains(&word.as_str()) {
                span(&mut out, "tok-k", &word);
            } else {
                out.push_str(&escape(&word));
            }
            i = end;
        } else {
            out.push_str(&escape(&c.to_string()));
            i += 1;
        }
    }
    out
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_strings_comments_and_numbers_get_classes_and_markup_is_escaped() {
        let html = code_block(
            "let x = \"<a>\"; // done\nfn f() -> u8 { 42 }",
            Some("rust"),
        );
        assert!(html.contains("<span class=\"tok-k\">let</span>"), "{html}");
        assert!(
            html.contains("<span class=\"tok-s\">&quot;&lt;a&gt;&quot;</span>"),
            "{html}"
        );
        assert!(
            html.contains("<span class=\"tok-c\">// done</span>"),
            "{html}"
        );
        assert!(html.contains("<span class=\"tok-n\">42</span>"), "{html}");
        assert!(html.starts_with("<pre class=\"code\"><code class=\"language-rust\">"));
        let shell = code_block("echo 'hi' # greet", Some("sh"));
        assert!(
            shell.contains("<span class=\"tok-c\"># greet</span>"),
            "{shell}"
        );
        assert!(
            shell.contains("<span class=\"tok-s\">&#39;hi&#39;</span>"),
            "{shell}"
        );
        // An unknown language is escaped text, no spans.
        let other = code_block("x <y>", Some("brainfuck"));
        assert!(
            other.contains("x &lt;y&gt;") && !other.contains("<span"),
            "{other}"
        );
        assert_eq!(language_of_path("src/lib.rs"), Some("rs"));
        assert_eq!(language_of_path("a/b.unknown"), None);
    }
}
