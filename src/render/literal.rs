//! Text shown exactly as written, never formatted: escaped for Telegram's HTML and for
//! Discord's Markdown.

/// `text` as literal Telegram HTML.
pub fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `text` as literal Discord Markdown: every ASCII punctuation character is escaped, so
/// no emphasis, spoiler, heading, list, link, mention or emoji code can form.
pub fn markdown_escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len() + text.len() / 4);
    for c in text.chars() {
        if c.is_ascii_punctuation() {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// Whether `text` can sit inside a Discord code block unchanged: a code block has no
/// escapes, so a fence inside it would end it early.
pub fn fits_code_block(text: &str) -> bool {
    !text.contains("```")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_cannot_form() {
        assert_eq!(
            markdown_escape("||hidden|| ~~x~~ [a](http://e) # h <@1> :smile:"),
            r"\|\|hidden\|\| \~\~x\~\~ \[a\]\(http\:\/\/e\) \# h \<\@1\> \:smile\:"
        );
        assert_eq!(markdown_escape("ü ✓ plain"), "ü ✓ plain");
    }

    #[test]
    fn html_is_literal() {
        assert_eq!(html_escape("<b>&amp;</b>"), "&lt;b&gt;&amp;amp;&lt;/b&gt;");
    }

    #[test]
    fn a_fence_cannot_sit_in_a_code_block() {
        assert!(fits_code_block("echo `date` ``"));
        assert!(!fits_code_block("echo ```\n@everyone"));
    }
}
