//! Where a session's prompt cache broke, read from the usage its requests reported.

use serde::Serialize;

use crate::record::RequestRecord;

/// A prompt smaller than this is not cached by any provider, so reading none of it is no break.
pub const MIN_CACHEABLE: u64 = 1024;

/// A request that read much less from cache than the previous request's prompt held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CacheBreak {
    /// 1-based request number.
    pub request: usize,
    /// Its id.
    pub id: String,
    /// Tokens the previous prompt held.
    pub previous_prompt: u64,
    /// Tokens this request read from cache.
    pub cache_read: u64,
}

/// Requests that read less than half of the previous prompt, when that prompt was big enough
/// to be cached at all.
pub fn find_breaks(requests: &[RequestRecord]) -> Vec<CacheBreak> {
    requests
        .windows(2)
        .enumerate()
        .filter_map(|(index, pair)| {
            let (previous, current) = (&pair[0], &pair[1]);
            let previous_prompt = previous.usage.prompt_tokens();
            (previous_prompt >= MIN_CACHEABLE && current.usage.cache_read * 2 < previous_prompt)
                .then(|| CacheBreak {
                    request: index + 2,
                    id: current.label(),
                    previous_prompt,
                    cache_read: current.usage.cache_read,
                })
        })
        .collect()
}
