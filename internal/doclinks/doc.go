// Package doclinks holds the check that the repository's Markdown documents
// (README.md, BENCHMARKS.md, docs/, the SDK guides) link only to files and
// headings that exist, so moving a document or renaming a heading cannot
// leave a newcomer at a dead link. It has no code of its own; see its test.
package doclinks
