// MLToolData: image decoding and preprocessing, folder/CSV data sets, splits, feature cache.
