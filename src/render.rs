//! Shapes Codex's Markdown replies for chat platforms: splitting at their length limits
//! with code fences kept balanced, and Telegram's HTML flavour.

/// Telegram counts message length in UTF-16 code units.
pub fn utf16_len(text: &str) -> usize {
    text.encode_utf16().count()
}

/// Discord counts message length in characters.
pub fn char_len(text: &str) -> usize {
    text.chars().count()
}

const FENCE: &str = "```";

/// Splits `text` into pieces of at most `limit` units (as `units` counts them), at line
/// boundaries where possible. A code fence open at a split is closed at the end of the
/// piece and reopened, with its language, at the start of the next.
pub fn split(text: &str, limit: usize, units: fn(&str) -> usize) -> Vec<String> {
    let text = text.trim_end();
    if units(text) <= limit {
        return vec![text.to_owned()];
    }
    let close = format!("\n{FENCE}");
    let mut pieces = Vec::new();
    let mut current = String::new();
    let mut open_fence: Option<String> = None;
    for line in text.split_inclusive('\n') {
        let mut rest = line;
        while !rest.is_empty() {
            // Room the piece must keep to close a fence that is open after this line.
            let fence_after = open_fence.is_some() != toggles_fence(rest);
            let reserve = if fence_after { units(&close) } else { 0 };
            let room = limit.saturating_sub(units(&current) + reserve);
            if units(rest) <= room {
                if toggles_fence(rest) {
                    open_fence = match open_fence {
                        Some(_) => None,
                        None => Some(rest.trim_end().to_owned()),
                    };
                }
                current.push_str(rest);
                break;
            }
            if current.trim().is_empty() || current == reopened(&open_fence) {
                // The line alone is too long: cut it at the room left.
                let room = limit.saturating_sub(units(&current) + units(&close));
                let cut = prefix_within(rest, room.max(1), units);
                current.push_str(&rest[..cut]);
                rest = &rest[cut..];
            }
            if open_fence.is_some() {
                if !current.ends_with('\n') {
                    current.push('\n');
                }
                current.push_str(FENCE);
            }
            pieces.push(current.trim_end().to_owned());
            current = reopened(&open_fence);
        }
    }
    if !current.trim().is_empty() && current != reopened(&open_fence) {
        pieces.push(current.trim_end().to_owned());
    }
    pieces
}

fn toggles_fence(line: &str) -> bool {
    line.trim_start().starts_with(FENCE)
}

fn reopened(fence: &Option<String>) -> String {
    fence
        .as_ref()
        .map_or_else(String::new, |info| format!("{info}\n"))
}

/// The longest prefix of `text` (at a char boundary) within `room` units.
fn prefix_within(text: &str, room: usize, units: fn(&str) -> usize) -> usize {
    let mut end = 0;
    for (index, c) in text.char_indices() {
        let next = index + c.len_utf8();
        if units(&text[..next]) > room {
            break;
        }
        end = next;
    }
    end.max(text.chars().next().map_or(0, char::len_utf8))
}

/// Markdown as Telegram's HTML parse mode understands it: fenced and inline code, bold,
/// links and headings; everything else is escaped text.
pub fn telegram_html(markdown: &str) -> String {
    let mut html = String::new();
    let mut code: Option<(String, String)> = None; // (language, body)
    for line in markdown.split_inclusive('\n') {
        let trimmed = line.trim();
        match (&mut code, trimmed.strip_prefix(FENCE)) {
            (None, Some(language)) => code = Some((language.trim().to_owned(), String::new())),
            (Some(_), Some(_)) => {
                let (language, body) = code.take().expect("inside a fence");
                html.push_str(&code_block(&language, &body));
                html.push('\n');
            }
            (Some((_, body)), None) => body.push_str(line),
            (None, None) => {
                let (text, newline) = line.strip_suffix('\n').map_or((line, ""), |t| (t, "\n"));
                match heading(text) {
                    Some(title) => html.push_str(&format!("<b>{}</b>", inline(title))),
                    None => html.push_str(&inline(text)),
                }
                html.push_str(newline);
            }
        }
    }
    // An unclosed fence still shows as code.
    if let Some((language, body)) = code {
        html.push_str(&code_block(&language, &body));
    }
    html.trim_end().to_owned()
}

fn heading(line: &str) -> Option<&str> {
    let title = line.trim_start_matches('#');
    (title.len() < line.len() && line.len() - title.len() <= 6 && title.starts_with(' '))
        .then(|| title.trim())
}

fn code_block(language: &str, body: &str) -> String {
    let body = escape(body.trim_end_matches('\n'));
    if language.is_empty() {
        format!("<pre>{body}</pre>")
    } else {
        format!(
            "<pre><code class=\"language-{}\">{body}</code></pre>",
            escape(language)
        )
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Inline code, **bold** and [links](url) in one line; the rest escaped.
fn inline(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('`')
            && let Some(end) = after.find('`')
        {
            out.push_str(&format!("<code>{}</code>", escape(&after[..end])));
            rest = &after[end + 1..];
        } else if let Some(after) = rest.strip_prefix("**")
            && let Some(end) = after.find("**")
            && end > 0
        {
            out.push_str(&format!("<b>{}</b>", inline(&after[..end])));
            rest = &after[end + 2..];
        } else if let Some((label, url, used)) = link(rest) {
            out.push_str(&format!(
                "<a href=\"{}\">{}</a>",
                escape(url).replace('"', "&quot;"),
                escape(label)
            ));
            rest = &rest[used..];
        } else {
            let c = rest.chars().next().expect("not empty");
            out.push_str(&escape(&c.to_string()));
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// `[label](http...)` at the start of `text`: label, url and bytes used.
fn link(text: &str) -> Option<(&str, &str, usize)> {
    let after = text.strip_prefix('[')?;
    let label_end = after.find("](")?;
    let url_part = &after[label_end + 2..];
    let url_end = url_part.find(')')?;
    let url = &url_part[..url_end];
    (url.starts_with("http://") || url.starts_with("https://")).then_some((
        &after[..label_end],
        url,
        1 + label_end + 2 + url_end + 1,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fences_balanced(piece: &str) -> bool {
        piece.lines().filter(|l| toggles_fence(l)).count() % 2 == 0
    }

    #[test]
    fn short_text_is_one_piece() {
        assert_eq!(split("hello\n", 10, char_len), vec!["hello"]);
    }

    #[test]
    fn splits_at_lines_within_the_limit() {
        let text = (0..300)
            .map(|i| format!("line number {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let pieces = split(&text, 500, char_len);
        assert!(pieces.len() >= 8);
        assert!(pieces.iter().all(|p| char_len(p) <= 500));
        assert_eq!(pieces.join("\n"), text, "splitting at lines loses nothing");
    }

    #[test]
    fn fences_are_closed_and_reopened_across_pieces() {
        let code: String = (0..200).map(|i| format!("let x{i} = {i};\n")).collect();
        let text = format!("Here:\n```rust\n{code}```\nDone.");
        let pieces = split(&text, 1000, char_len);
        assert!(pieces.len() >= 3, "{}", pieces.len());
        for piece in &pieces {
            assert!(char_len(piece) <= 1000, "{} units", char_len(piece));
            assert!(fences_balanced(piece), "unbalanced piece:\n{piece}");
        }
        assert!(
            pieces[1].starts_with("```rust\n"),
            "fence not reopened: {}",
            &pieces[1][..20]
        );
        assert!(pieces.last().unwrap().ends_with("Done."));
    }

    #[test]
    fn a_huge_line_is_cut_and_utf16_is_counted() {
        let text = "😀".repeat(3000); // 6000 UTF-16 units
        let pieces = split(&text, 4096, utf16_len);
        assert_eq!(pieces.len(), 2);
        assert!(pieces.iter().all(|p| utf16_len(p) <= 4096));
        assert_eq!(pieces.concat(), text);
    }

    #[test]
    fn telegram_html_escapes_and_formats() {
        let md = "# Title\nUse `a<b>` and **bold** <tag> & [docs](https://x.dev/a?b=1).\n```python\nif a < b:\n    pass\n```\nend";
        assert_eq!(
            telegram_html(md),
            "<b>Title</b>\nUse <code>a&lt;b&gt;</code> and <b>bold</b> &lt;tag&gt; &amp; \
             <a href=\"https://x.dev/a?b=1\">docs</a>.\n<pre><code class=\"language-python\">\
             if a &lt; b:\n    pass</code></pre>\nend"
        );
        assert_eq!(telegram_html("plain text"), "plain text");
        assert_eq!(telegram_html("```\nopen fence"), "<pre>open fence</pre>");
        assert_eq!(telegram_html("a ** b and `x"), "a ** b and `x");
    }
}
