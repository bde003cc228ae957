import Foundation
import MLToolCore
import Testing
@testable import MLToolImport

/// The HDF5 reader under the Keras importer, on hdf5_cases.h5 (written by h5py in make_fixtures.py).
@Suite struct KerasHDF5FileTests {
    let path = KerasFixture.path("hdf5_cases.h5")

    @Test func stringAttributesOfEveryKind() throws {
        try HDF5File.read(path: path) { (f: HDF5File) throws in
            #expect(try f.string("vlen", of: f.root) == "héllo")
            #expect(try f.string("fixed", of: f.root) == "fixed")
            #expect(try f.strings("vlen_list", of: f.root) == ["a", "bc", ""])
            #expect(try f.strings("fixed_list", of: f.root) == ["ab", "c"])
            // h5py writes an empty list as an empty float64 array.
            #expect(try f.strings("empty", of: f.root) == [])
            #expect(f.hasAttribute("vlen", of: f.root) && !f.hasAttribute("nope", of: f.root))
            #expect(KerasFixture.message { try f.string("number", of: f.root) }
                == "hdf5_cases.h5: / attribute 'number': expected strings, found integers")
            #expect(KerasFixture.message { try f.string("vlen_list", of: f.root) }
                == "hdf5_cases.h5: / attribute 'vlen_list': expected one string, found 3 values")
            #expect(KerasFixture.message { try f.string("nope", of: f.root) }
                == "hdf5_cases.h5: / attribute 'nope': expected the attribute, found nothing")
        }
    }

    @Test func floatDatasetsOfEverySize() throws {
        try HDF5File.read(path: path) { (f: HDF5File) throws in
            let f32 = try f.readFloats(f.open("g/f32", in: f.root))
            #expect(f32.shape == [2, 3] && f32.data == [0, 0.25, 0.5, 0.75, 1, 1.25])
            let g = try f.open("g", in: f.root)
            #expect(f.isGroup(g))
            #expect(try f.readFloats(f.open("f64", in: g)).data == [1.5, -2.25])
            #expect(try f.readFloats(f.open("f16", in: g)).data == [0.5, 3, -1])
            let chunked = try f.readFloats(f.open("chunked", in: g))
            #expect(chunked.shape == [100] && chunked.data[99] == 1 && abs(chunked.data[1] - 1.0 / 99) < 1e-7)
            #expect(try f.readFloats(f.open("ints", in: g)).data == [1, 2])
            #expect(KerasFixture.message { try f.readFloats(f.open("strings", in: g)) }
                == "hdf5_cases.h5: /g/strings: expected numbers, found strings")
            #expect(KerasFixture.message { try f.readFloats(g) } == "hdf5_cases.h5: /g: expected a dataset, found a group")
            // A dataset that declares 4 MB but stores nothing is not read (no allocation of fill values).
            #expect(KerasFixture.message { try f.readFloats(f.open("unwritten", in: g)) }
                == "hdf5_cases.h5: /g/unwritten: expected 4000000 stored bytes for shape [1000,1000], found 0")
        }
    }

    @Test func onlyHardLinksAreFollowed() throws {
        try HDF5File.read(path: path) { (f: HDF5File) throws in
            let soft = "hdf5_cases.h5: /soft: refused: HDF5 soft link to '/g'; only hard links are followed"
            #expect(KerasFixture.message { try f.open("soft", in: f.root) } == soft)
            // Every component of a path is checked, not just the last one.
            #expect(KerasFixture.message { try f.open("soft/f32", in: f.root) } == soft)
            #expect(KerasFixture.message { try f.exists("soft/f32", in: f.root) } == soft)
            #expect(KerasFixture.message { try f.open("ext", in: f.root) }
                == "hdf5_cases.h5: /ext: refused: HDF5 external link to 'other.h5' object '/g'; links out of the file are never followed")
            #expect(try f.exists("g/f32", in: f.root))
            #expect(try !f.exists("g/nope", in: f.root))
            #expect(try !f.exists("nope/x", in: f.root))
            #expect(KerasFixture.message { try f.open("g/missing", in: f.root) }
                == "hdf5_cases.h5: /g/missing: expected an HDF5 group or dataset, found nothing")
            for bad in ["g/../g", "./g", "g//f32", ""] {
                #expect(throws: ImportError.self, "\(bad)") { try f.open(bad, in: f.root) }
            }
        }
    }

    @Test func storageOutsideTheFileIsRefused() throws {
        try HDF5File.read(path: path) { (f: HDF5File) throws in
            #expect(KerasFixture.message { try f.readFloats(f.open("external_storage", in: f.root)) }
                == "hdf5_cases.h5: /external_storage: refused: dataset with external raw storage (1 file); data outside the file is never read")
            #expect(KerasFixture.message { try f.readFloats(f.open("virtual", in: f.root)) }
                == "hdf5_cases.h5: /virtual: refused: virtual dataset (mapped from other datasets or files); only data stored in the file is read")
        }
    }
}
