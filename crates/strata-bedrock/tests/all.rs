//! Public-API tests of strata-bedrock.
