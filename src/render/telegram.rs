//! Markdown as Telegram's HTML parse mode shows it, from `pulldown-cmark`'s events: bold,
//! italics, strikethrough, inline and fenced code, links, headings, quotes and nested
//! lists. Anything Telegram has no tag for becomes escaped text.

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

use super::literal::html_escape as escape;

/// Link targets Telegram opens; others are shown as plain text.
const LINK_SCHEMES: [&str; 4] = ["http://", "https://", "mailto:", "tg://"];

pub fn telegram_html(markdown: &str) -> String {
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut writer = Writer::default();
    for event in Parser::new_ext(markdown, options) {
        writer.event(event);
    }
    writer.out.trim_end().to_owned()
}

#[derive(Default)]
struct Writer {
    out: String,
    /// Open lists, innermost last: the next number of an ordered list.
    lists: Vec<Option<u64>>,
    /// Open links, innermost last: whether an `<a>` was written for it.
    links: Vec<bool>,
    /// The closing tags of the code block being written.
    code_close: &'static str,
}

impl Writer {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.out.push_str(&escape(&text)),
            Event::Code(code) => self
                .out
                .push_str(&format!("<code>{}</code>", escape(&code))),
            Event::Html(html) | Event::InlineHtml(html) => self.out.push_str(&escape(&html)),
            Event::InlineMath(math) | Event::DisplayMath(math) => self.out.push_str(&escape(&math)),
            Event::FootnoteReference(name) => self.out.push_str(&format!("[{}]", escape(&name))),
            Event::SoftBreak | Event::HardBreak => self.out.push('\n'),
            Event::Rule => {
                self.out.push_str("──────────");
                self.block_end();
            }
            Event::TaskListMarker(done) => self.out.push_str(if done { "☑ " } else { "☐ " }),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Heading { .. } | Tag::Strong => self.out.push_str("<b>"),
            Tag::Emphasis => self.out.push_str("<i>"),
            Tag::Strikethrough => self.out.push_str("<s>"),
            Tag::BlockQuote(_) => self.out.push_str("<blockquote>"),
            Tag::CodeBlock(kind) => {
                let language = match &kind {
                    CodeBlockKind::Fenced(info) => info.split([' ', ',']).next().unwrap_or(""),
                    CodeBlockKind::Indented => "",
                };
                self.code_close = match language.is_empty() {
                    true => {
                        self.out.push_str("<pre>");
                        "</pre>"
                    }
                    false => {
                        let language = escape_attribute(language);
                        self.out
                            .push_str(&format!("<pre><code class=\"language-{language}\">"));
                        "</code></pre>"
                    }
                };
            }
            Tag::List(first) => {
                if !self.lists.is_empty() {
                    self.line_end();
                }
                self.lists.push(first);
            }
            Tag::Item => self.item_marker(),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                let linked = LINK_SCHEMES.iter().any(|s| dest_url.starts_with(s));
                if linked {
                    let href = escape_attribute(&dest_url);
                    self.out.push_str(&format!("<a href=\"{href}\">"));
                }
                self.links.push(linked);
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) => {
                self.out.push_str("</b>");
                self.block_end();
            }
            TagEnd::Strong => self.out.push_str("</b>"),
            TagEnd::Emphasis => self.out.push_str("</i>"),
            TagEnd::Strikethrough => self.out.push_str("</s>"),
            TagEnd::BlockQuote(_) => {
                self.trim_newlines();
                self.out.push_str("</blockquote>");
                self.block_end();
            }
            TagEnd::CodeBlock => {
                self.trim_newlines();
                self.out.push_str(self.code_close);
                self.block_end();
            }
            TagEnd::Paragraph => match self.lists.is_empty() {
                true => self.block_end(),
                false => self.line_end(),
            },
            TagEnd::Item => self.line_end(),
            TagEnd::List(_) => {
                self.lists.pop();
                if self.lists.is_empty() {
                    self.block_end();
                }
            }
            // The guard pops the link either way; only a written `<a>` is closed.
            TagEnd::Link | TagEnd::Image if self.links.pop() == Some(true) => {
                self.out.push_str("</a>");
            }
            _ => {}
        }
    }

    /// "• " or "3. ", indented by the list's depth.
    fn item_marker(&mut self) {
        let depth = self.lists.len().saturating_sub(1);
        self.out.push_str(&"    ".repeat(depth));
        match self.lists.last_mut() {
            Some(Some(number)) => {
                self.out.push_str(&format!("{number}. "));
                *number += 1;
            }
            _ => self.out.push_str("• "),
        }
    }

    fn trim_newlines(&mut self) {
        let kept = self.out.trim_end_matches('\n').len();
        self.out.truncate(kept);
    }

    /// Ends a line (in lists).
    fn line_end(&mut self) {
        if !self.out.is_empty() && !self.out.ends_with('\n') {
            self.out.push('\n');
        }
    }

    /// Ends a block: one blank line before the next.
    fn block_end(&mut self) {
        self.trim_newlines();
        if !self.out.is_empty() {
            self.out.push_str("\n\n");
        }
    }
}

fn escape_attribute(text: &str) -> String {
    escape(text).replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_what_telegram_shows() {
        let cases: &[(&str, &str)] = &[
            ("plain text", "plain text"),
            (
                "# Title\nUse `a<b>` and **bold** <tag> & [docs](https://x.dev/a?b=1).",
                "<b>Title</b>\n\nUse <code>a&lt;b&gt;</code> and <b>bold</b> &lt;tag&gt; &amp; \
                 <a href=\"https://x.dev/a?b=1\">docs</a>.",
            ),
            (
                "```python\nif a < b:\n\n    pass\n```\nend",
                "<pre><code class=\"language-python\">if a &lt; b:\n\n    pass</code></pre>\n\nend",
            ),
            ("```\nopen fence", "<pre>open fence</pre>"),
            ("a ** b and `x", "a ** b and `x"),
            ("*it* _em_ ~~gone~~", "<i>it</i> <i>em</i> <s>gone</s>"),
            (
                "- one\n- two\n  1. deep\n  2. deeper\n- three",
                "• one\n• two\n    1. deep\n    2. deeper\n• three",
            ),
            ("3. c\n4. d", "3. c\n4. d"),
            ("> quoted\n> text", "<blockquote>quoted\ntext</blockquote>"),
            (
                "[run](javascript:alert(1)) and ![img](https://x.dev/i.png)",
                "run and <a href=\"https://x.dev/i.png\">img</a>",
            ),
            ("- [x] done\n- [ ] todo", "• ☑ done\n• ☐ todo"),
            ("para one\n\npara two", "para one\n\npara two"),
            (
                "**bold `code` [l](https://a.b)**",
                "<b>bold <code>code</code> <a href=\"https://a.b\">l</a></b>",
            ),
        ];
        for (markdown, html) in cases {
            assert_eq!(&telegram_html(markdown), html, "{markdown:?}");
        }
    }
}
