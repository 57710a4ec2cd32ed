package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// decode unmarshals an API response's data into v.
func decode(data json.RawMessage, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("unexpected response data: %w", err)
	}
	return nil
}

// printJSON writes data indented, ending with a newline.
func printJSON(w io.Writer, data json.RawMessage) error {
	var buf bytes.Buffer
	if len(bytes.TrimSpace(data)) == 0 {
		data = json.RawMessage("null")
	}
	if err := json.Indent(&buf, data, "", "  "); err != nil {
		return fmt.Errorf("unexpected response data: %w", err)
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// printJSONLine writes data compacted onto one line.
func printJSONLine(w io.Writer, data json.RawMessage) error {
	line, err := compact(data)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, line)
	return err
}

// compact renders JSON on one line; empty input is null.
func compact(data json.RawMessage) (string, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return "null", nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return "", fmt.Errorf("unexpected response data: %w", err)
	}
	return buf.String(), nil
}

// table writes aligned columns; call flush when done.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

// row writes one line; empty cells print as "-" so columns stay countable.
func (t *table) row(cells ...string) {
	for i, c := range cells {
		if c == "" {
			cells[i] = "-"
		}
		cells[i] = strings.NewReplacer("\t", " ", "\n", " ").Replace(cells[i])
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }
