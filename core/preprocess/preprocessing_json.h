#pragma once

// The JSON form of Preprocessing, shared with the model setup (model/model_setup.cpp).

#include "preprocess/preprocessing.h"

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace torchscope {

Preprocessing preprocessingFromObject(const nlohmann::json& object); // throws torchscope::Error
nlohmann::json preprocessingToObject(const Preprocessing& preprocessing);
nlohmann::json parseJson(const std::string& text, const std::string& what); // throws torchscope::Error

} // namespace torchscope
