// SentencePiece models through libsentencepiece (sentencepiece_tokenizer.h).
#include "tokenizer/sentencepiece_tokenizer.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"
#include "tokenizer/tokenizer_identity.h"

#ifdef TRAINRT_HAVE_SENTENCEPIECE
#include <sentencepiece_processor.h>
#endif

namespace trt::tok {

#ifdef TRAINRT_HAVE_SENTENCEPIECE
namespace {

// The fields of a serialized protobuf message, read by hand: the library's headers do not
// include sentencepiece_model.pb.h, and the identity needs only a few fields.
struct ProtoField {
    uint32_t number = 0;
    uint32_t wire = 0;    // 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32
    uint64_t value = 0;   // varint and fixed values
    std::string_view data;  // length-delimited
};

uint64_t read_varint(std::string_view& in, const std::string& source) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && !in.empty(); shift += 7) {
        const uint8_t b = static_cast<uint8_t>(in.front());
        in.remove_prefix(1);
        v |= uint64_t(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    fail(Status::Format, source, ": the SentencePiece model's protobuf is cut short");
}

// The next field of `in` (advanced past it), or false at its end.
bool next_field(std::string_view& in, ProtoField& f, const std::string& source) {
    if (in.empty()) return false;
    const uint64_t tag = read_varint(in, source);
    f = ProtoField{static_cast<uint32_t>(tag >> 3), static_cast<uint32_t>(tag & 7), 0, {}};
    const auto take = [&](size_t n) {
        if (n > in.size())
            fail(Status::Format, source, ": the SentencePiece model's protobuf is cut short");
        const std::string_view part = in.substr(0, n);
        in.remove_prefix(n);
        return part;
    };
    const auto fixed = [&](size_t n) {
        const std::string_view b = take(n);
        for (size_t i = 0; i < n; i++) f.value |= uint64_t(static_cast<uint8_t>(b[i])) << (8 * i);
    };
    switch (f.wire) {
        case 0: f.value = read_varint(in, source); break;
        case 1: fixed(8); break;
        case 2: f.data = take(static_cast<size_t>(read_varint(in, source))); break;
        case 5: fixed(4); break;
        default:
            fail(Status::Format, source, ": the SentencePiece model's protobuf has a field of "
                 "wire type ", f.wire, ", which this reader does not take");
    }
    return true;
}

// A field as (number, wire type, value or bytes) into the identity.
void put_field(IdentityContent& c, const ProtoField& f) {
    c.u32(f.number);
    c.u32(f.wire);
    if (f.wire == 2) {
        c.bytes(f.data);
    } else {
        c.u32(static_cast<uint32_t>(f.value));
        c.u32(static_cast<uint32_t>(f.value >> 32));
    }
}

// Every field of a message, by field number (the order a writer put them in does not count).
void put_message(IdentityContent& c, std::string_view msg, const std::string& source) {
    std::vector<ProtoField> fields;
    for (ProtoField f; next_field(msg, f, source);) fields.push_back(f);
    std::stable_sort(fields.begin(), fields.end(),
                     [](const ProtoField& a, const ProtoField& b) { return a.number < b.number; });
    c.u32(static_cast<uint32_t>(fields.size()));
    for (const ProtoField& f : fields) put_field(c, f);
}

// A SentencePiece {1 piece, 2 score, 3 type} of the ModelProto.
struct Piece {
    std::string_view text;
    uint32_t score_bits = 0, type = 1;  // proto2 defaults: score 0, type NORMAL
};
Piece read_piece(std::string_view bytes, const std::string& source) {
    Piece p;
    for (ProtoField f; next_field(bytes, f, source);) {
        if (f.number == 1 && f.wire == 2) p.text = f.data;
        if (f.number == 2 && f.wire == 5) p.score_bits = static_cast<uint32_t>(f.value);
        if (f.number == 3 && f.wire == 0) p.type = static_cast<uint32_t>(f.value);
    }
    return p;
}

// The ModelProto's pieces in id order (field 1, repeated).
std::vector<Piece> read_pieces(std::string_view proto, const std::string& source) {
    std::vector<Piece> out;
    for (ProtoField f; next_field(proto, f, source);)
        if (f.wire == 2 && f.number == 1) out.push_back(read_piece(f.data, source));
    return out;
}

// ModelProto: 1 pieces {1 piece, 2 score, 3 type}, 2 trainer_spec, 3 normalizer_spec,
// 4 self_test_data (not behaviour), 5 denormalizer_spec. Of the trainer spec only what
// encoding and decoding read: 3 model_type, 24 treat_whitespace_as_suffix,
// 26 allow_whitespace_only_pieces, 35 byte_fallback, 40..43 unk/bos/eos/pad ids, 44 unk_surface.
std::string sentencepiece_identity(std::string_view proto, const std::string& source) {
    IdentityContent c(kSentencePieceKind);
    std::vector<std::string_view> pieces;
    std::string_view trainer, normalizer, denormalizer;
    for (ProtoField f; next_field(proto, f, source);) {
        if (f.wire != 2) continue;
        if (f.number == 1) pieces.push_back(f.data);
        if (f.number == 2) trainer = f.data;
        if (f.number == 3) normalizer = f.data;
        if (f.number == 5) denormalizer = f.data;
    }
    c.u32(static_cast<uint32_t>(pieces.size()));
    for (std::string_view p : pieces) {
        const Piece piece = read_piece(p, source);
        c.bytes(piece.text);
        c.u32(piece.score_bits);
        c.u32(piece.type);
    }
    std::vector<ProtoField> kept;
    for (ProtoField f; next_field(trainer, f, source);)
        if (f.number == 3 || f.number == 24 || f.number == 26 || f.number == 35 ||
            (f.number >= 40 && f.number <= 44))
            kept.push_back(f);
    std::stable_sort(kept.begin(), kept.end(),
                     [](const ProtoField& a, const ProtoField& b) { return a.number < b.number; });
    c.u32(static_cast<uint32_t>(kept.size()));
    for (const ProtoField& f : kept) put_field(c, f);
    put_message(c, normalizer, source);
    put_message(c, denormalizer, source);
    return c.take();
}

// SentencePieceProcessor's encode and decode are const and keep no state between calls, so
// one loaded model serves every thread.
class SentencePieceTokenizer final : public TokenizerModel {
public:
    SentencePieceTokenizer(std::string_view bytes, const std::string& source) : source_(source) {
        const sentencepiece::util::Status st = sp_.LoadFromSerializedProto(bytes);
        if (!st.ok())
            fail(Status::Format, source, ": not a SentencePiece model SentencePiece can load (",
                 st.ToString(), ")");
        if (sp_.GetPieceSize() <= 0)
            fail(Status::Format, source, ": the SentencePiece model has no pieces");
    }

    std::vector<uint32_t> encode(std::string_view text) const override {
        std::vector<int> ids;
        const sentencepiece::util::Status st = sp_.Encode(text, &ids);
        if (!st.ok())
            fail(Status::InvalidArgument, source_, ": SentencePiece cannot encode the text (",
                 st.ToString(), ")");
        return std::vector<uint32_t>(ids.begin(), ids.end());  // ids are >= 0
    }

    std::string decode(const std::vector<uint32_t>& ids) const override {
        const std::vector<int> in(ids.begin(), ids.end());  // below id_limit(): fits an int
        std::string out;
        const sentencepiece::util::Status st = sp_.Decode(in, &out);
        if (!st.ok())
            fail(Status::InvalidArgument, source_, ": SentencePiece cannot decode the ids (",
                 st.ToString(), ")");
        return out;
    }

    uint32_t id_limit() const override { return static_cast<uint32_t>(sp_.GetPieceSize()); }

    bool find(std::string_view token, uint32_t& id) const override {
        // PieceToId answers unk_id for a piece it does not have: check the piece back.
        const int i = sp_.PieceToId(token);
        if (i < 0 || i >= sp_.GetPieceSize() || sp_.IdToPiece(i) != token) return false;
        id = static_cast<uint32_t>(i);
        return true;
    }

    std::string eos_token() const override {
        const int e = sp_.eos_id();
        return e >= 0 && e < sp_.GetPieceSize() ? sp_.IdToPiece(e) : std::string();
    }

    // The dummy prefix ("▁" before each encoded text) and whitespace normalization make pieces
    // encode differently from the whole.
    bool splits_at_line_starts() const override { return false; }

    std::string identity_content() const override {
        return sentencepiece_identity(sp_.serialized_model_proto(), source_);
    }

    VocabTable vocab_table() const override {
        VocabTable t;
        t.model = VocabTable::Model::SentencePiece;
        const std::string proto = sp_.serialized_model_proto();
        for (const Piece& p : read_pieces(proto, source_)) {
            t.tokens.emplace_back(p.text);
            float score;
            std::memcpy(&score, &p.score_bits, 4);
            t.scores.push_back(score);
            // ModelProto's piece types are llama.cpp's token types, number for number.
            t.kinds.push_back(p.type >= 1 && p.type <= 6 ? static_cast<TokenKind>(p.type)
                                                         : TokenKind::Normal);
        }
        const int n = static_cast<int>(t.tokens.size());
        const auto id = [n](int i) { return i >= 0 && i < n ? i : -1; };
        t.unk = id(sp_.unk_id());
        t.bos = id(sp_.bos_id());
        t.eos = id(sp_.eos_id());
        return t;
    }

private:
    std::string source_;
    sentencepiece::SentencePieceProcessor sp_;
};

}  // namespace

bool sentencepiece_supported() { return true; }

std::shared_ptr<const TokenizerModel> sentencepiece_from_bytes(std::string_view bytes,
                                                               const std::string& source) {
    return std::make_shared<const SentencePieceTokenizer>(bytes, source);
}

#else

bool sentencepiece_supported() { return false; }

std::shared_ptr<const TokenizerModel> sentencepiece_from_bytes(std::string_view,
                                                               const std::string& source) {
    fail(Status::Unsupported, source, ": a SentencePiece model, and this build of libtrainrt has "
         "no SentencePiece support (rebuild with libsentencepiece-dev installed, "
         "-DTRAINRT_SENTENCEPIECE=ON), or use the model's tokenizer.json");
}

#endif

}  // namespace trt::tok
