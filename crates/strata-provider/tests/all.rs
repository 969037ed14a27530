//! Public-API tests of strata-provider (one integration binary).

mod complete;
