//! ISO 8601 timestamps as Pi writes them (`2026-01-15T10:00:01.000Z`).

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now: a message's `timestamp` as Pi writes it.
pub fn now_unix_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// [`now_unix_millis`], unsigned.
pub(crate) fn now_millis() -> u64 {
    u64::try_from(now_unix_millis()).unwrap_or(0)
}

/// `2026-01-15T10:00:01.000Z` for the given Unix milliseconds (JavaScript's `toISOString`).
pub fn format_iso_millis(unix_millis: i64) -> String {
    let days = unix_millis.div_euclid(86_400_000);
    let in_day = unix_millis.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    let hours = in_day / 3_600_000;
    let minutes = in_day / 60_000 % 60;
    let seconds = in_day / 1000 % 60;
    let millis = in_day % 1000;
    format!("{year:04}-{month:02}-{day:02}T{hours:02}:{minutes:02}:{seconds:02}.{millis:03}Z")
}

/// The current time as Pi's ISO text.
pub fn now_iso() -> String {
    format_iso_millis(now_unix_millis())
}

/// Unix milliseconds of an ISO 8601 timestamp (`YYYY-MM-DDTHH:MM:SS[.fff][Z|±HH:MM]`), if it is one.
pub fn parse_iso_millis(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let year = digits(&b[0..4])?;
    let month = digits(&b[5..7])?;
    let day = digits(&b[8..10])?;
    let hour = digits(&b[11..13])?;
    let minute = digits(&b[14..16])?;
    let second = digits(&b[17..19])?;
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &b[19..];
    let mut millis = 0i64;
    if let Some((&b'.', fraction)) = rest.split_first() {
        let len = fraction.iter().take_while(|c| c.is_ascii_digit()).count();
        if len == 0 {
            return None;
        }
        let mut scale = 100;
        for &digit in &fraction[..len.min(3)] {
            millis += i64::from(digit - b'0') * scale;
            scale /= 10;
        }
        rest = &fraction[len..];
    }
    let offset_minutes = match rest {
        [] | [b'Z'] | [b'z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let value = digits(&[*h1, *h2])? * 60 + digits(&[*m1, *m2])?;
            if *sign == b'+' { value } else { -value }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    Some(
        days * 86_400_000 + hour * 3_600_000 + minute * 60_000 + second * 1000 + millis
            - offset_minutes * 60_000,
    )
}

fn digits(bytes: &[u8]) -> Option<i64> {
    let mut value = 0i64;
    for &byte in bytes {
        if !byte.is_ascii_digit() {
            return None;
        }
        value = value * 10 + i64::from(byte - b'0');
    }
    Some(value)
}

// Howard Hinnant's civil calendar algorithms.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_like_javascript() {
        // new Date("2026-01-15T10:00:01.000Z").getTime()
        let millis = 1_768_471_201_000;
        assert_eq!(format_iso_millis(millis), "2026-01-15T10:00:01.000Z");
        assert_eq!(parse_iso_millis("2026-01-15T10:00:01.000Z"), Some(millis));
        assert_eq!(parse_iso_millis("2026-01-15T10:00:01Z"), Some(millis));
        assert_eq!(
            parse_iso_millis("2026-01-15T11:00:01.000+01:00"),
            Some(millis)
        );
        assert_eq!(format_iso_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            parse_iso_millis("2024-02-29T23:59:59.999Z")
                .map(format_iso_millis)
                .as_deref(),
            Some("2024-02-29T23:59:59.999Z")
        );
        assert_eq!(parse_iso_millis("yesterday"), None);
    }
}
