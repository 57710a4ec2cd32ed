package com.healthtech.partneropen.server;

import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;

/**
 * Walks a cursor-paginated list route lazily, one page request at a time, so callers iterate every item with a
 * for-each loop without handling cursors. Each iteration starts again from the first cursor.
 */
public final class Paginator<T> implements Iterable<T> {
  /** One fetched page: its items and the cursor of the next page (null when this page is the last). */
  public static final class Page<T> {
    final List<T> items;
    final String next;

    /** Creates a page. */
    public Page(List<T> items, String next) {
      this.items = items == null ? Collections.<T>emptyList() : items;
      this.next = next;
    }
  }

  /** Fetches the page after a cursor (null for the first page). */
  public interface Fetcher<T> {
    /** Fetches one page. */
    Page<T> fetch(String cursor);
  }

  private final String first;
  private final Fetcher<T> fetcher;

  /** A paginator starting after {@code first} (null for the beginning). */
  public Paginator(String first, Fetcher<T> fetcher) {
    this.first = first;
    this.fetcher = fetcher;
  }

  @Override
  public Iterator<T> iterator() {
    return new Iterator<T>() {
      Iterator<T> cur = Collections.<T>emptyList().iterator();
      String cursor = first;
      boolean done;
      boolean started;

      @Override
      public boolean hasNext() {
        while (!cur.hasNext()) {
          if (done) {
            return false;
          }
          Page<T> p = fetcher.fetch(cursor);
          if (started && p.next != null && p.next.equals(cursor) && p.items.isEmpty()) {
            done = true; // a server that repeats the cursor with nothing new: stop rather than loop
            return false;
          }
          started = true;
          cur = p.items.iterator();
          cursor = p.next;
          done = p.next == null;
        }
        return true;
      }

      @Override
      public T next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        return cur.next();
      }
    };
  }
}
