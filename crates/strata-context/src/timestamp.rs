//! Entry timestamps (ISO 8601 strings) turned into epoch milliseconds, as JavaScript's
//! `new Date(timestamp).getTime()` does for the forms Pi writes.

use serde_json::Value;

/// Largest magnitude a JavaScript `Date` holds (±100,000,000 days in ms).
const MAX_TIME_MS: f64 = 8.64e15;

/// Epoch milliseconds of an entry's `timestamp` value, or `None` where JavaScript yields `NaN`.
///
/// Strings take the ISO 8601 forms `YYYY-MM-DD` and `YYYY-MM-DDTHH:MM[:SS[.fff]][Z|±HH:MM]`;
/// a date-time without an offset is read as UTC (JavaScript would use the local zone, which
/// would make the result depend on the machine). Numbers pass through as JavaScript clips them.
pub fn epoch_millis(value: &Value) -> Option<f64> {
    match value {
        Value::String(text) => parse_iso8601(text).map(|ms| ms as f64),
        Value::Number(number) => number.as_f64().and_then(time_clip),
        _ => None,
    }
}

/// JavaScript's `TimeClip`: out-of-range is `NaN`, the rest truncates toward zero.
fn time_clip(ms: f64) -> Option<f64> {
    if !ms.is_finite() || ms.abs() > MAX_TIME_MS {
        return None;
    }
    Some(ms.trunc() + 0.0)
}

/// Epoch milliseconds of an ISO 8601 entry timestamp; `0` where JavaScript yields `NaN`
/// (strata's message timestamps are integers and cannot hold `NaN`).
pub fn epoch_millis_of(timestamp: &str) -> i64 {
    parse_iso8601(timestamp).unwrap_or(0)
}

/// Parses the ISO 8601 subset JavaScript's `Date` accepts into epoch milliseconds.
pub fn parse_iso8601(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let mut cursor = Cursor { bytes, pos: 0 };
    let year = cursor.year()?;
    cursor.expect(b'-')?;
    let month = cursor.digits(2)?;
    cursor.expect(b'-')?;
    let day = cursor.digits(2)?;
    // V8 checks the day against 31 only: 2023-02-29 is March 1st.
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let days = days_from_civil(year, month, 1) + day - 1;
    if cursor.done() {
        return clip_ms(days * 86_400_000);
    }
    cursor.expect(b'T')?;
    let hour = cursor.digits(2)?;
    cursor.expect(b':')?;
    let minute = cursor.digits(2)?;
    let mut second = 0;
    let mut millis = 0;
    if cursor.peek() == Some(b':') {
        cursor.pos += 1;
        second = cursor.digits(2)?;
        if cursor.peek() == Some(b'.') {
            cursor.pos += 1;
            millis = cursor.fraction_millis()?;
        }
    }
    // 24:00 is allowed only as the end of a day.
    if hour > 24
        || minute > 59
        || second > 59
        || (hour == 24 && (minute, second, millis) != (0, 0, 0))
    {
        return None;
    }
    let offset_minutes = match cursor.peek() {
        None => 0,
        Some(b'Z') => {
            cursor.pos += 1;
            0
        }
        Some(sign @ (b'+' | b'-')) => {
            cursor.pos += 1;
            let oh = cursor.digits(2)?;
            cursor.expect(b':')?;
            let om = cursor.digits(2)?;
            if oh > 23 || om > 59 {
                return None;
            }
            let minutes = oh * 60 + om;
            if sign == b'+' { minutes } else { -minutes }
        }
        Some(_) => return None,
    };
    if !cursor.done() {
        return None;
    }
    let ms = days * 86_400_000 + hour * 3_600_000 + minute * 60_000 + second * 1000 + millis
        - offset_minutes * 60_000;
    clip_ms(ms)
}

fn clip_ms(ms: i64) -> Option<i64> {
    ((ms as f64).abs() <= MAX_TIME_MS).then_some(ms)
}

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn done(&self) -> bool {
        self.pos == self.bytes.len()
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.peek() == Some(byte)).then(|| self.pos += 1)
    }

    fn digits(&mut self, count: usize) -> Option<i64> {
        let mut value = 0i64;
        for _ in 0..count {
            let digit = self.peek().filter(u8::is_ascii_digit)?;
            value = value * 10 + i64::from(digit - b'0');
            self.pos += 1;
        }
        Some(value)
    }

    /// Four-digit year, or a signed six-digit extended year (`-000001` is not allowed for 0).
    fn year(&mut self) -> Option<i64> {
        match self.peek()? {
            sign @ (b'+' | b'-') => {
                self.pos += 1;
                let year = self.digits(6)?;
                if sign == b'-' {
                    (year != 0).then_some(-year)
                } else {
                    Some(year)
                }
            }
            _ => self.digits(4),
        }
    }

    /// At least one fraction digit; milliseconds are the first three, the rest truncated.
    fn fraction_millis(&mut self) -> Option<i64> {
        let start = self.pos;
        let mut millis = 0i64;
        while let Some(digit) = self.peek().filter(u8::is_ascii_digit) {
            let index = self.pos - start;
            if index < 3 {
                millis = millis * 10 + i64::from(digit - b'0');
            }
            self.pos += 1;
        }
        let count = self.pos - start;
        if count == 0 {
            return None;
        }
        for _ in count..3 {
            millis *= 10;
        }
        Some(millis)
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pi_iso_strings_match_javascript() {
        // Values from node: new Date(s).getTime()
        assert_eq!(
            parse_iso8601("2026-01-15T10:00:02.000Z"),
            Some(1_768_471_202_000)
        );
        assert_eq!(parse_iso8601("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(
            parse_iso8601("2024-02-29T23:59:59.999Z"),
            Some(1_709_251_199_999)
        );
        assert_eq!(parse_iso8601("1969-12-31T23:59:59.999Z"), Some(-1));
        assert_eq!(
            parse_iso8601("2024-12-03T14:00:01.000+02:00"),
            Some(1_733_227_201_000)
        );
        assert_eq!(parse_iso8601("2024-12-03"), Some(1_733_184_000_000));
        assert_eq!(
            parse_iso8601("2024-12-03T14:00:01.1234Z"),
            Some(1_733_234_401_123)
        );
        assert_eq!(parse_iso8601("2024-12-03T14:00Z"), Some(1_733_234_400_000));
        assert_eq!(
            parse_iso8601("+002024-12-03T14:00:00Z"),
            Some(1_733_234_400_000)
        );
        assert_eq!(
            parse_iso8601("2023-02-29T00:00:00Z"),
            Some(1_677_628_800_000)
        );
    }

    #[test]
    fn malformed_strings_are_nan() {
        for bad in [
            "",
            "yesterday",
            "2024-13-01T00:00:00Z",
            "2023-02-32T00:00:00Z",
            "2024-12-03T25:00:00Z",
            "2024-12-03T14:00:01.Z",
            "2024-12-03T14:00:01Zjunk",
            "-000000-01-01T00:00:00Z",
        ] {
            assert_eq!(parse_iso8601(bad), None, "{bad}");
        }
    }

    #[test]
    fn numbers_are_clipped_like_javascript() {
        assert_eq!(epoch_millis(&json!(1234.9)), Some(1234.0));
        assert_eq!(epoch_millis(&json!(-1234.9)), Some(-1234.0));
        assert_eq!(epoch_millis(&json!(9e15)), None);
        assert_eq!(epoch_millis(&json!(null)), None);
        assert_eq!(epoch_millis(&json!(true)), None);
    }
}
