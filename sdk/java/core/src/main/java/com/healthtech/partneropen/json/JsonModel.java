package com.healthtech.partneropen.json;

import java.util.Map;

/** A typed model that knows its JSON form, so {@link Json#write} can serialise request bodies of any model. */
public interface JsonModel {
  /** The fields that were set (or received), in schema order, as a JSON object ready for {@link Json#write}. */
  Map<String, Object> toJson();
}
