//! The built-in themes. The view draws in one palette (`dark`, for dark terminals); a theme
//! maps its colours on the finished frame, so every part of the screen follows it without the
//! drawing code knowing themes: `light` darkens text that would vanish on a light
//! background, `mono` leaves colour to the terminal (highlights in reverse video).

use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};

/// The themes `/settings` and `theme = "…"` in config.toml choose from.
pub const THEMES: [&str; 3] = ["dark", "light", "mono"];

/// The theme named `name`, or an error listing them.
pub fn parse(name: &str) -> Result<&'static str, String> {
    THEMES
        .iter()
        .find(|theme| **theme == name)
        .copied()
        .ok_or_else(|| format!("unknown theme `{name}` (one of {})", THEMES.join(", ")))
}

/// Recolours a drawn frame for `theme`.
pub fn apply(theme: &str, buffer: &mut Buffer) {
    match theme {
        "light" => {
            for cell in &mut buffer.content {
                cell.fg = light(cell.fg);
            }
        }
        "mono" => {
            for cell in &mut buffer.content {
                // A highlighted row keeps standing out, in reverse video.
                if cell.bg != Color::Reset {
                    cell.modifier |= Modifier::REVERSED;
                }
                cell.fg = Color::Reset;
                cell.bg = Color::Reset;
            }
        }
        _ => {}
    }
}

/// Dark-background colours as they read on a light background.
fn light(color: Color) -> Color {
    match color {
        Color::White | Color::Gray => Color::Black,
        Color::DarkGray => Color::Gray,
        Color::LightBlue | Color::Cyan | Color::LightCyan => Color::Blue,
        Color::Yellow | Color::LightYellow => Color::Rgb(150, 100, 0),
        Color::Green | Color::LightGreen => Color::Rgb(0, 120, 0),
        Color::Magenta | Color::LightMagenta => Color::Rgb(140, 0, 140),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use ratatui::layout::Rect;
    use ratatui::style::Style;

    use super::*;

    #[test]
    fn themes_recolour_the_frame() {
        let mut buffer = Buffer::empty(Rect::new(0, 0, 2, 1));
        buffer.set_string(0, 0, "ab", Style::new().fg(Color::White).bg(Color::Cyan));
        let mut dark = buffer.clone();
        apply("dark", &mut dark);
        assert_eq!(dark, buffer);
        apply("light", &mut buffer);
        assert_eq!(buffer.content[0].fg, Color::Black);
        assert_eq!(buffer.content[0].bg, Color::Cyan);
        apply("mono", &mut buffer);
        assert_eq!(buffer.content[1].fg, Color::Reset);
        assert_eq!(buffer.content[1].bg, Color::Reset);
        assert!(buffer.content[1].modifier.contains(Modifier::REVERSED));
        assert_eq!(parse("mono"), Ok("mono"));
        assert!(parse("neon").is_err());
    }
}
