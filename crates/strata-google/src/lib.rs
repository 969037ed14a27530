//! strata adapter for Gemini generateContent / streamGenerateContent (AI Studio and Vertex).
