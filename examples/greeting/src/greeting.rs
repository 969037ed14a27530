pub fn greet() -> &'static str { "Helo" }
