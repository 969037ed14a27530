//! Public-API tests of strata-google.
